// What a user sees of a tensor-parallel run's group collectives. The
// flight recorder: each
// of them recorded on the tensor group's communicator in the `tensor`
// phase, tagged with the unit the rank was computing; at tp 2 without
// sequence parallelism, a block's two row-parallel sums in forward (again
// when it is recomputed) and its two column-parallel input-gradient sums in
// backward, per micro-batch. The step's breakdown (--breakdown): the
// training thread's time in them as tensor_wait_s, not as compute, so the
// parts still add up to the step.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "mpi_test_util.h"
#include "tierzero/data.h"
#include "tierzero/flight_recorder.h"
#include "tierzero/mesh.h"
#include "tierzero/plan.h"
#include "tierzero/sharded_trainer.h"

namespace tierzero {
namespace {

namespace fs = std::filesystem;

TEST(TensorParallelSeen, GroupCollectivesAreTheTensorPhaseOfTheirUnitAndATensorWait) {
  const int w = test::world_size();
  if (w % 2 != 0) GTEST_SKIP() << "tp = 2 needs an even world";
  auto world = mpi_world(Topology::flat(w));
  const fs::path dir = test::shared_temp_dir();
  start_flight_recorder(*world, {4096, dir.string()});
  const TokenData data = TokenData::builtin();
  std::set<int> tensor_comms;  // every tensor group's so far
  for (const bool recompute : {false, true}) {
    SCOPED_TRACE(recompute ? "recomputing" : "storing");
    const Mesh mesh(*world, MeshShape{2, std::nullopt, false});  // a tensor communicator of its own
    TrainConfig cfg = test::tiny_run(2, 2, 32, 1, DType::f32, "gpt-tiny");
    cfg.recompute = recompute;
    ShardedTrainer t(cfg, fit_to(strategy_plan("zero3"), mesh.data_topology()), mesh, data);
    t.step();
    ASSERT_TRUE(flight_dump("test", FlightDumpKind::request));
    std::ifstream in(dir / "flight" / ("rank-" + std::to_string(world->rank()) + ".json"));
    const nlohmann::json d = nlohmann::json::parse(in);
    const int tensor = mesh.tensor()->flight_id();
    tensor_comms.insert(tensor);
    std::map<int, int> per_unit;
    for (const nlohmann::json& r : d["records"]) {
      EXPECT_EQ(r["phase"] == "tensor", tensor_comms.count(r["comm"].get<int>()) == 1) << r.dump();
      if (r["comm"] == tensor) ++per_unit[r["unit"].get<int>()];
    }
    // Per micro-batch: the two row-parallel sums, again when the block is recomputed, and the two input-gradient sums.
    const int per_micro = recompute ? 6 : 4;
    const GptLayout layout(cfg.model, TpShard{2, mesh.tp_rank()});
    for (int l = 0; l < cfg.model.layers; ++l) EXPECT_EQ(per_unit[layout.block_unit(l)], per_micro * cfg.grad_accum) << "block " << l;
    EXPECT_EQ(per_unit.count(-1), 0u) << "a tensor collective outside any unit's computation";
    const StepBreakdown& b = t.last_breakdown();
    const double parts = b.forward_s + b.backward_s + b.optimizer_s + b.gather_wait_s + b.reduce_wait_s + b.control_wait_s +
                         b.slot_wait_s + b.tensor_wait_s;
    EXPECT_GT(b.tensor_wait_s, 0.0);
    EXPECT_NEAR(parts, b.step_s, 0.05 * b.step_s + 0.002);
    fs::remove(dir / "flight" / ("rank-" + std::to_string(world->rank()) + ".json"));  // the next dump is a new file
    world->barrier();
  }
  if (world->rank() == 0) fs::remove_all(dir);
}

}  // namespace
}  // namespace tierzero
