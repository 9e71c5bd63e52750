// The simulator against published results it was not built from: the
// ZeRO++ paper's ZeRO++/ZeRO-3 throughput ratios on 384 V100 (24 DGX-2,
// 1 or 4 InfiniBand links per node; Wang et al. 2023, arXiv:2306.10209, and
// the DeepSpeed ZeRO++ blog) and the Frontier paper's hier3 results (Xu et
// al. 2025, arXiv:2501.04266), each within 15%, with one system
// description per cluster (src/topo/presets.cc) and DeepSpeed's engine
// model. docs/simulator.md gives the table and what was inferred.
#include <gtest/gtest.h>

#include <cmath>

#include "tierzero/planner.h"
#include "tierzero/simulator.h"

namespace tierzero {
namespace {

double tflops(const char* system, const char* model, const char* strategy, int ranks, int micro_batch, int seq_len,
              Engine engine = Engine::deepspeed) {
  SimInput in;
  in.model = gpt_preset(model);
  in.system = load_system(system);
  in.ranks = ranks;
  in.micro_batch = micro_batch;
  in.seq_len = seq_len;
  in.recompute = true;
  in.engine = engine;
  in.plan = fit_to(strategy_plan(strategy), in.topology());
  in.plan = fit_memory(in);
  return simulate(in).tflops_per_device;
}

void expect_within(double predicted, double published, double tolerance, const std::string& what) {
  EXPECT_LE(std::abs(predicted / published - 1), tolerance) << what << ": predicted " << predicted << ", published " << published;
}

// Published: ~2.2 (1K tokens per GPU, 1 link), ~2 (2K, 1 link), 1.28-1.36
// (1K, 4 links), 1.24-1.29 (2K, 4 links); the ranges' middles are used.
TEST(SimValidation, ZeroPlusPlusOverZero3On384V100) {
  struct Point {
    const char* system;
    int tokens;
    double published;
  };
  for (const Point& p : {Point{"dgx2-ib1", 1, 2.2}, Point{"dgx2-ib1", 2, 2.0}, Point{"dgx2-ib4", 1, 1.32}, Point{"dgx2-ib4", 2, 1.265}}) {
    const double ratio = tflops(p.system, "gpt-18b", "zeropp", 384, p.tokens, 1024) / tflops(p.system, "gpt-18b", "zero3", 384, p.tokens, 1024);
    expect_within(ratio, p.published, 0.15, std::string(p.system) + ", " + std::to_string(p.tokens) + "K tokens per GPU");
  }
}

// Published for a 20B GPT on Frontier: ZeRO++/ZeRO-3 1.405, hier3/ZeRO++
// 1.71, hier3's scaling efficiency 0.94 from 8 to 384 GCDs. Reproduced
// together at 512 tokens per GCD with the facility's link figures.
TEST(SimValidation, Hier3OnFrontier) {
  const double z3 = tflops("frontier", "gpt-20b", "zero3", 384, 1, 512);
  const double zpp = tflops("frontier", "gpt-20b", "zeropp", 384, 1, 512);
  const double h3 = tflops("frontier", "gpt-20b", "hier3", 384, 1, 512);
  const double h3_8 = tflops("frontier", "gpt-20b", "hier3", 8, 1, 512);
  expect_within(zpp / z3, 1.405, 0.15, "ZeRO++/ZeRO-3");
  expect_within(h3 / zpp, 1.71, 0.15, "hier3/ZeRO++");
  expect_within(h3 / h3_8, 0.94, 0.15, "hier3 scaling 8 -> 384");
}

// The same on the measured system (frontier-rccl: RCCL's measured rates,
// data/measured-collectives), with the tolerances of the reproduction in
// docs/simulator.md (+-0.15 on the ratios, +-0.03 on the scaling): of the
// settings tried (512 to 4096 tokens per GCD, both engine models), only
// ZeRO++/ZeRO-3 at 4096 tokens with DeepSpeed's engine reproduces; the
// table there says why hier3/ZeRO++ and the scaling do not.
TEST(SimValidation, ZeroPlusPlusOverZero3OnFrontierWithMeasuredRccl) {
  const double z3 = tflops("frontier-rccl", "gpt-20b", "zero3", 384, 2, 2048);
  const double zpp = tflops("frontier-rccl", "gpt-20b", "zeropp", 384, 2, 2048);
  EXPECT_NEAR(zpp / z3, 1.405, 0.15);
}

}  // namespace
}  // namespace tierzero
