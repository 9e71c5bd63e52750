// The bytes a tensor-parallel run moves are the simulator's (issue 52:
// priced as executed): on 4 ranks (tp 2 x dp 2; the tensor group on the
// package level of package=2,node=2 and on the node level of node=2,world=2)
// for gpt-tiny and llama-tiny under zero3, zeropp, mics and hier3, and at tp 4 (dp 1)
// for llama-tiny, whose 2 key/value heads are then shared by 2 members each, with
// and without recomputation and sequence parallelism; on 8 ranks (tp 2 on the
// package of 2x2x2 under the four strategies, dp 4 over node and world; tp 4 on
// the node of node=4,world=2, dp 2); with two micro-batches per step, every rank's traffic
// counters over a step equal, level by level, the traffic model's
// data-parallel transfers of its member's layout over the data ranks plus
// the tensor group's collectives (sim/tensor_traffic.h); and the simulator's
// memory per rank is what the member's engine allocates, byte for byte.
#include <gtest/gtest.h>

#include "mpi_test_util.h"
#include "sim/tensor_traffic.h"
#include "sim/traffic_model.h"
#include "tierzero/data.h"
#include "tierzero/mesh.h"
#include "tierzero/plan.h"
#include "tierzero/sharded_trainer.h"
#include "tierzero/simulator.h"
#include "tierzero/system.h"

namespace tierzero {
namespace {

// One step pair of `model` under strategy `name` on the mesh `shape` of the job's ranks laid out as `spec`: each
// rank's bytes per level and its memory, the simulator's.
void expect_the_simulators_bytes(const std::string& spec, const MeshShape& shape, const char* model, const char* name, bool recompute) {
  SCOPED_TRACE(std::string(model) + " " + name + " at tp " + std::to_string(shape.tp) + " on " + spec + (recompute ? ", recomputing" : "") +
               (shape.sp ? ", sequence parallel" : ""));
  const TokenData data = TokenData::builtin();
  const int ranks = test::world_size();
  const Topology topo = Topology::parse(spec, ranks);
  auto world = mpi_world(topo);
  const Mesh mesh(*world, shape);
  TrainConfig cfg = test::tiny_run(2, 2, 32, 2, DType::bf16, model);
  cfg.recompute = recompute;
  const Plan plan = fit_to(strategy_plan(name), mesh.data_topology());
  ShardedTrainer t(cfg, plan, mesh, data);
  t.step();
  t.step();
  SimInput in;
  in.model = cfg.model, in.micro_batch = 2, in.seq_len = 32, in.grad_accum = 2, in.dtype = cfg.param_dtype;
  in.mesh = shape;
  in.recompute = Recompute{recompute ? Recompute::Kind::full : Recompute::Kind::none};
  const TensorMember member{TpShard{shape.tp, mesh.tp_rank()}, topo, world->rank()};
  std::vector<HopTransfer> want = step_transfers(plan, mesh.data_topology(), cfg, mesh.data_rank(), &member);
  for (const HopTransfer& h : tensor_transfers(in, topo, world->rank(), 32)) want.push_back(h);
  const auto expected = total_bytes(want), got = t.last_step_bytes();
  for (int l = 0; l < kNumLevels; ++l) EXPECT_EQ(got[l], expected[l]) << level_name(static_cast<Level>(l)) << " on rank " << world->rank();
  // And the memory: the simulator counts every byte the member's engine allocates.
  in.system = load_system("frontier");  // its levels hold both layouts'; memory does not depend on its rates
  in.system.device.runtime_bytes = 0;
  in.ranks = ranks, in.topology_spec = spec, in.plan = plan;
  double allocated = 0;
  for (const auto& [k, v] : t.memory_bytes()) allocated += static_cast<double>(v);
  EXPECT_EQ(simulate(in).memory_total, allocated) << "on rank " << world->rank();
}

TEST(TensorParallelBytes, BytesPerLevelAreTheSimulators) {
  if (test::world_size() != 4) GTEST_SKIP() << "the layouts are of 4 ranks";
  for (const auto& [spec, level] : {std::pair{"package=2,node=2", Level::package}, std::pair{"node=2,world=2", Level::node}})
    for (const bool sp : {false, true})
      for (const char* model : test::kTinyModels)
        for (const char* name : {"zero3", "zeropp", "mics", "hier3"})
          for (const bool recompute : {false, true}) expect_the_simulators_bytes(spec, MeshShape{2, level, sp}, model, name, recompute);
}

// llama-tiny's 2 key/value heads shared by 2 members each at tp 4 (dp 1), and 6 query heads over 3 key/value
// heads at tp 2 (dp 2; each member holds two, one of them shared): the engine's sums of their gradients, one per
// block and micro-batch, and its buffer for them, priced as well.
TEST(TensorParallelBytes, SharedKeyValueHeadsBytesAreTheSimulators) {
  if (test::world_size() != 4) GTEST_SKIP() << "the layouts are of 4 ranks";
  for (const bool sp : {false, true})
    for (const bool recompute : {false, true}) {
      expect_the_simulators_bytes("node=4", MeshShape{4, Level::node, sp}, "llama-tiny", "zero3", recompute);
      expect_the_simulators_bytes("node=2,world=2", MeshShape{2, Level::node, sp}, test::kGqa63, "zeropp", recompute);
    }
}

// Eight ranks: the data-parallel hops over two levels beside the tensor group (2x2x2, tp 2 on the package), and
// tp 4 over a node's four ranks with the data ranks across the world.
TEST(TensorParallelBytes, EightRanksBytesAreTheSimulators) {
  if (test::world_size() != 8) GTEST_SKIP() << "the layouts are of 8 ranks";
  for (const bool sp : {false, true})
    for (const char* model : test::kTinyModels) {
      for (const char* name : {"zero3", "zeropp", "mics", "hier3"})
        expect_the_simulators_bytes("package=2,node=2,world=2", MeshShape{2, Level::package, sp}, model, name, false);
      for (const char* name : {"zero3", "zeropp"})
        expect_the_simulators_bytes("node=4,world=2", MeshShape{4, Level::node, sp}, model, name, false);
    }
}

}  // namespace
}  // namespace tierzero
