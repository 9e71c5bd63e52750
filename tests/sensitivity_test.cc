// The range simulate prints (tierzero/sensitivity.h): the collectives'
// bandwidth on every level and the GEMMs' efficiency at 0.75 and 1.25 times
// the assumed. Transfer time is bytes over bandwidth and a compute-bound
// GEMM's time FLOPs over peak x efficiency, so each part scales by exactly
// 1 / 0.75 or 1 / 1.25 and nothing else moves.
#include <gtest/gtest.h>

#include "tierzero/gpt_config.h"
#include "tierzero/plan.h"
#include "tierzero/sensitivity.h"
#include "tierzero/system.h"

namespace tierzero {
namespace {

SimInput job(const char* system, int ranks) {
  SimInput in;
  in.model = gpt_preset("gpt-20b");
  in.system = load_system(system);
  in.ranks = ranks;
  in.micro_batch = 1;
  in.seq_len = 2048;
  in.plan = fit_to(strategy_plan("zero3"), in.topology());
  return in;
}

void expect_relative(double got, double want) { EXPECT_NEAR(got, want, 1e-12 * want) << got << " vs " << want; }

// frontier: link rates alone; frontier-rccl: tables of achieved points per collective, scaled with the rate.
TEST(Sensitivity, TransferScalesAsOneOverTheNetworksEfficiencyAndNothingElseMoves) {
  for (const char* system : {"frontier", "frontier-rccl"}) {
    const SimInput in = job(system, 64);
    const SimResult base = simulate(in);
    for (const double f : {1 - kSensitivity, 1 + kSensitivity}) {
      const SimResult r = simulate(with_efficiency(in, f, 1));
      double transfer = 0;
      for (int l = 0; l < kNumLevels; ++l) {
        expect_relative(r.comm_time_s[l], base.comm_time_s[l] / f);
        EXPECT_EQ(r.latency_s[l], base.latency_s[l]) << system << " level " << l;
        EXPECT_EQ(r.quant_time_s[l], base.quant_time_s[l]) << system << " level " << l;
        transfer += base.comm_time_s[l];
      }
      EXPECT_GT(transfer, 0) << system;
      EXPECT_EQ(r.compute_s, base.compute_s) << system;
      EXPECT_EQ(r.memory_total, base.memory_total) << system;
    }
  }
}

// gpt-20b's GEMMs at 2048 tokens are compute-bound on an MI250X GCD even at 1.25 x its efficiency (0.706 x 1.25 < 1).
TEST(Sensitivity, GemmTimeScalesAsOneOverTheirEfficiencyAndNothingElseMoves) {
  const SimInput in = job("frontier", 64);
  ASSERT_LT(in.system.device.gemm_efficiency * (1 + kSensitivity), 1);
  const SimResult base = simulate(in);
  for (const double g : {1 - kSensitivity, 1 + kSensitivity}) {
    const SimResult r = simulate(with_efficiency(in, 1, g));
    expect_relative(r.gemm_s, base.gemm_s / g);
    EXPECT_EQ(r.attention_s, base.attention_s);
    EXPECT_EQ(r.memory_ops_s, base.memory_ops_s);
    EXPECT_EQ(r.optimizer_s, base.optimizer_s);
    EXPECT_EQ(r.comm_time_s, base.comm_time_s);
  }
}

// An efficiency is a fraction of the peak: 1.25 x the A100's fitted 0.8003 is capped at 1, and FP8's moves with it.
TEST(Sensitivity, AnEfficiencyStaysAtMostOne) {
  const SimInput in = job("dgx-h100", 16);
  const SimInput a100 = with_efficiency(job("dgx-a100", 16), 1, 1 + kSensitivity);
  EXPECT_EQ(a100.system.device.gemm_efficiency, 1.0);
  const SimInput h100 = with_efficiency(in, 1, 1 - kSensitivity);
  EXPECT_EQ(h100.system.device.gemm_efficiency, in.system.device.gemm_efficiency * (1 - kSensitivity));
  EXPECT_EQ(h100.system.device.gemm_fp8_efficiency, in.system.device.gemm_fp8_efficiency * (1 - kSensitivity));
}

// The range's ends are both inputs high and both low, and the prediction lies between them.
TEST(Sensitivity, TheRangeHoldsThePrediction) {
  for (const char* system : {"frontier", "dgx-h100"}) {
    const SimInput in = job(system, 64);
    const SimResult base = simulate(in);
    const SimRange range = simulate_range(in);
    EXPECT_EQ(range.fastest.step_time_s, simulate(with_efficiency(in, 1 + kSensitivity, 1 + kSensitivity)).step_time_s);
    EXPECT_EQ(range.slowest.step_time_s, simulate(with_efficiency(in, 1 - kSensitivity, 1 - kSensitivity)).step_time_s);
    EXPECT_LT(range.fastest.step_time_s, base.step_time_s) << system;
    EXPECT_GT(range.slowest.step_time_s, base.step_time_s) << system;
    EXPECT_GT(range.fastest.tokens_per_s_per_device, base.tokens_per_s_per_device) << system;
  }
}

}  // namespace
}  // namespace tierzero
