// Persistent units (Plan::persist_threshold, DeepSpeed's
// stage3_param_persistence_threshold) on 1, 3 and 8 ranks: units at or
// under the threshold are held whole, so a run trains bit for bit as with
// every unit partitioned (fp32 and bf16, every strategy that partitions
// params, hpZ's backward copy included), moves the bytes of the traffic
// model (no forward or backward gather of a whole unit, one all-gather
// after the update), fewer than without; params take the memory the
// layout says; a checkpoint saved without persistence resumes with it,
// bit for bit.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "mpi_test_util.h"
#include "plan/shard_layout.h"
#include "sim/traffic_model.h"
#include "tierzero/mpi.h"
#include "tierzero/sharded_trainer.h"

namespace tierzero {
namespace {

// The embedding and the head of both tiny models (gpt-tiny: 20480 and 128
// parameters; llama-tiny: 16384 and 16448), not their blocks (~50000).
constexpr std::size_t kThreshold = 20480;

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// A strategy's partitions without quantisation: a whole unit is never
// quantised, so only unquantised plans train identically with and without.
Plan persisting(const std::string& name, const Topology& topo, std::size_t threshold) {
  Plan p = fit_to(strategy_plan(name), topo);
  p.weight_bits = 16;
  p.grad_bits = HopBits{};
  p.persist_threshold = threshold;
  return p;
}

TEST(ShardLayout, UnitsUnderTheThresholdAreWholeOnEveryRank) {
  const GptLayout model(gpt_preset("gpt-tiny"));
  const Topology topo = Topology::parse("node=4,world=2", 8);
  const ShardLayout s = ShardLayout::make(model, topo, Level::world, 5, kThreshold);
  const auto& units = model.units();
  ASSERT_EQ(units.front().numel, 20480u);
  for (std::size_t u = 0; u < units.size(); ++u) {
    const bool whole = units[u].numel <= kThreshold;
    EXPECT_EQ(s.whole[u], whole) << units[u].name;
    EXPECT_EQ(s.shard[u], whole ? units[u].numel : (units[u].numel + 7) / 8) << units[u].name;
    EXPECT_EQ(s.begin(static_cast<int>(u)), whole ? 0 : 5 * s.shard[u]) << units[u].name;
    EXPECT_EQ(s.valid(model, static_cast<int>(u)), whole ? units[u].numel : s.shard[u]) << units[u].name;
  }
  // A replicated state has nothing to keep whole: every unit is whole anyway.
  const ShardLayout r = ShardLayout::make(model, topo, std::nullopt, 5, kThreshold);
  for (std::size_t u = 0; u < units.size(); ++u) EXPECT_EQ(r.shard[u], units[u].numel);
}

TEST(Persistence, WholeUnitsTrainBitForBitAndMoveTheModelsBytes) {
  const TokenData data = TokenData::builtin();
  const Topology topo = test::standard_layout();
  auto world = mpi_world(topo);
  const int me = world->rank();
  for (const char* model : test::kTinyModels) {
    for (const DType dtype : {DType::f32, DType::bf16}) {
      TrainConfig cfg = test::tiny_run(2, 1, 32, 3, dtype, model);
      cfg.schedule.warmup = 2;
      const GptLayout units(cfg.model);
      for (const char* name : {"zero3", "mics", "zeropp", "hier3"}) {
        SCOPED_TRACE(std::string(model) + " " + std::string(dtype_name(dtype)) + " " + name);
        const Plan plain = persisting(name, topo, 0), whole = persisting(name, topo, kThreshold);
        ShardedTrainer base(cfg, plain, *world, data), kept(cfg, whole, *world, data);
        for (int i = 0; i < 3; ++i) {
          const StepStats want = base.step(), got = kept.step();
          EXPECT_EQ(got.loss, want.loss) << "step " << i;
          EXPECT_EQ(got.grad_norm, want.grad_norm) << "step " << i;
        }
        EXPECT_EQ(kept.gather_master(), base.gather_master());
        const std::vector<HopTransfer> model_hops = step_transfers(whole, topo, cfg, me);
        const auto got = kept.last_step_bytes(), want = total_bytes(model_hops);
        const auto without = base.last_step_bytes();
        for (int l = 0; l < kNumLevels; ++l) EXPECT_EQ(got[l], want[l]) << "level " << level_name(static_cast<Level>(l));
        // No gather of a whole unit in forward or backward. Where params have one partition (no hpZ copy) the
        // step's one all-gather replaces two, so every level moves less; with hpZ, the backward gather it
        // replaces was inside the node, and the step's gather, decomposed like the reductions, may move more
        // at the inner levels: fewer collectives, not fewer bytes.
        for (const HopTransfer& h : model_hops) {
          if (h.unit >= 0 && h.phase != Phase::step) {
            EXPECT_GT(units.units()[h.unit].numel, kThreshold) << units.units()[h.unit].name;
          }
        }
        if (whole.bwd_params == whole.params && topo.size() > 1) {
          for (int l = 0; l < kNumLevels; ++l) EXPECT_LE(got[l], without[l]) << "level " << level_name(static_cast<Level>(l));
          EXPECT_LT(got[0] + got[1] + got[2], without[0] + without[1] + without[2]);
        }
        // params: whole units at full size, the rest as ceil(n / G); the backward copy likewise.
        const auto sized = [&](const Partition& p) {
          std::size_t n = 0;
          for (const UnitInfo& u : units.units()) n += u.numel <= kThreshold ? u.numel : ceil_div(u.numel, partition_group_size(topo, p));
          return n * dtype_size(dtype);
        };
        const auto mem = test::memory_of(kept);
        EXPECT_EQ(mem.at("params"), sized(whole.params));
        EXPECT_EQ(mem.at("bwd_params"), whole.bwd_params != whole.params ? sized(whole.bwd_params) : 0);
        EXPECT_EQ(mem.at("grads"), test::memory_of(base).at("grads"));  // gradients and optimizer state stay partitioned
        EXPECT_EQ(mem.at("optim"), test::memory_of(base).at("optim"));
      }
    }
  }
}

TEST(Persistence, ACheckpointWithoutPersistenceResumesWithItBitForBit) {
  const TokenData data = TokenData::builtin();
  const Topology topo = test::standard_layout();
  auto world = mpi_world(topo);
  const std::string dir = test::shared_temp_dir();
  TrainConfig cfg = test::tiny_run(2, 1, 32, 4, DType::bf16, "llama-tiny");
  cfg.schedule.warmup = 2;
  ShardedTrainer straight(cfg, persisting("zeropp", topo, 0), *world, data);
  std::vector<double> want;
  std::string saved;
  for (int i = 0; i < 4; ++i) {
    want.push_back(straight.step().loss);
    if (i == 1) saved = straight.save_checkpoint(dir, 0);
  }
  ShardedTrainer resumed(cfg, persisting("zeropp", topo, kThreshold), *world, data);
  EXPECT_TRUE(resumed.load_checkpoint(saved)) << "another layout: rebuilt from the optimizer state";
  for (int i = 2; i < 4; ++i) EXPECT_EQ(resumed.step().loss, want[i]) << "step " << i;
  world->barrier();
  if (world->rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tierzero
