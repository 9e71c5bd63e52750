// The simulator: closed-form compute and memory, its traffic equal to the
// traffic model the engine is tested against, and the ordering of the
// strategies' network time on Frontier.
#include "tierzero/sim.h"

#include <gtest/gtest.h>

#include <map>

#include "tierzero/planner.h"
#include "tierzero/traffic_model.h"

namespace tierzero {
namespace {

SimInput frontier(const char* strategy, int ranks) {
  SimInput in;
  in.model = gpt_preset("gpt-20b");
  in.system = load_system("frontier");
  in.ranks = ranks;
  in.micro_batch = 1;
  in.plan = fit_to(strategy_plan(strategy), in.topology());
  return in;
}

TEST(Simulator, ComputeTimeIsModelFlopsOverAchievablePeak) {
  SimInput in = frontier("zero3", 8);
  const SimResult r = simulate(in);
  const double flops = in.model.flops_per_token(2048) * 2048;
  EXPECT_NEAR(r.compute_s, flops / (191.5e12 * 0.52), 1e-9);
  in.recompute = true;
  EXPECT_NEAR(simulate(in).compute_s, r.compute_s * 4 / 3, 1e-9);
}

TEST(Simulator, MemoryFollowsThePartitionFormulas) {
  const SimInput in = frontier("zero3", 384);
  const SimResult r = simulate(in);
  std::map<std::string, double> m(r.memory_bytes.begin(), r.memory_bytes.end());
  const double n = static_cast<double>(in.model.num_params());
  EXPECT_NEAR(m["optim"], 12 * n / 384, 12 * 50.0);  // plus at most one element of padding per unit
  EXPECT_NEAR(m["params"], 2 * n / 384, 2 * 50.0);
  EXPECT_EQ(m["bwd_params"], 0.0);
  const SimResult h = simulate(frontier("hier3", 384));
  std::map<std::string, double> mh(h.memory_bytes.begin(), h.memory_bytes.end());
  EXPECT_NEAR(mh["bwd_params"], 2 * n / 2, 2 * 50.0);  // the package copy: half the model per GCD
  EXPECT_GT(simulate(frontier("ddp", 8)).memory_total, 64e9);
  EXPECT_FALSE(simulate(frontier("ddp", 8)).fits);
}

TEST(Simulator, TrafficIsTheEnginesTrafficModel) {
  for (const char* s : {"zero3", "zeropp", "mics", "hier3"}) {
    const SimInput in = frontier(s, 64);
    TrainConfig cfg;
    cfg.model = in.model;
    cfg.micro_batch = in.micro_batch;
    EXPECT_EQ(simulate(in).bytes_per_level, total_bytes(step_transfers(in.plan, in.topology(), cfg, 0))) << s;
  }
}

TEST(Simulator, NetworkTimeOrdersTheStrategiesOnFrontier) {
  const double z3 = simulate(frontier("zero3", 384)).comm_time_s[2];
  const double zpp = simulate(frontier("zeropp", 384)).comm_time_s[2];
  const double h3 = simulate(frontier("hier3", 384)).comm_time_s[2];
  EXPECT_LT(h3, zpp);
  EXPECT_LT(zpp, z3);
  EXPECT_EQ(simulate(frontier("hier3", 8)).comm_time_s[2], 0.0);  // one node: no network
}

}  // namespace
}  // namespace tierzero

namespace tierzero {
namespace {

TEST(Planner, ListsOnlyPlansThatFitFastestFirst) {
  SimInput base = frontier("zero3", 64);
  const auto plans = search_plans(base, 20e9, 8);
  ASSERT_FALSE(plans.empty());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    EXPECT_LE(plans[i].result.memory_total, 20e9);
    if (i) EXPECT_LE(plans[i].result.tflops_per_device, plans[i - 1].result.tflops_per_device);
  }
  // With less memory than any plan needs, nothing is listed.
  EXPECT_TRUE(search_plans(base, 1e6, 8).empty());
}

}  // namespace
}  // namespace tierzero
