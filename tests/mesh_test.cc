// The mesh (tierzero/mesh.h): at tp = 1 the data-parallel side is the
// world's; the tensor-parallel degree is checked against its level (the
// error names both), and tp > 1 factors the tensor group out of the data
// topology; the simulator takes the mesh's shape, prices tp = 1 as before
// and refuses tp > 1, which it does not price yet.
#include "tierzero/mesh.h"

#include <gtest/gtest.h>

#include <string>

#include "tierzero/error.h"
#include "tierzero/simulator.h"

namespace tierzero {
namespace {

const Topology k222 = Topology::parse("package=2,node=2,world=2", 8);

// The ConfigError `shape` raises on `world`, or "" when it raises none.
std::string error_of(const MeshShape& shape, const Topology& world) {
  try {
    shape.data_topology(world);
  } catch (const ConfigError& e) {
    return e.message();
  }
  return "";
}

TEST(Mesh, TpOneIsTheWorldItself) {
  const auto world = self_world(Topology::flat(1));
  const auto before = world->split_by(0);
  const Mesh mesh(*world);
  // It makes no communicator: the next one takes the next place in the flight recorder's table.
  EXPECT_EQ(world->split_by(0)->flight_id(), before->flight_id() + 1);
  EXPECT_EQ(&mesh.data(), world.get());
  EXPECT_EQ(&mesh.world(), world.get());
  EXPECT_EQ(mesh.tp(), 1);
  EXPECT_EQ(mesh.data_rank(), world->rank());
  EXPECT_EQ(mesh.data_size(), world->size());
  EXPECT_EQ(mesh.data_topology(), world->topology());
  EXPECT_EQ(mesh.tp_level(), Level::world);  // the innermost level a flat topology declares
}

TEST(Mesh, TheTensorLevelIsTheInnermostDeclaredUnlessNamed) {
  EXPECT_EQ(MeshShape{}.level(k222), Level::package);
  EXPECT_EQ(MeshShape{}.level(Topology::parse("node=4,world=2", 8)), Level::node);
  EXPECT_EQ((MeshShape{1, Level::node}).level(k222), Level::node);
  for (const Topology& t : {k222, Topology::parse("node=4,world=2", 8), Topology::flat(5)}) {
    EXPECT_EQ(MeshShape{}.data_topology(t), t) << t.to_string();
    EXPECT_EQ((MeshShape{1, Level::world}).data_topology(t), t) << t.to_string();
  }
}

TEST(Mesh, ADegreeThatDoesNotDivideItsLevelNamesBoth) {
  EXPECT_EQ(error_of({3, std::nullopt}, k222), "tp = 3 does not divide the package level's fan-out 2 (topology package=2,node=2,world=2)");
  EXPECT_EQ(error_of({3, Level::node}, Topology::parse("node=4,world=2", 8)),
            "tp = 3 does not divide the node level's fan-out 4 (topology node=4,world=2)");
  EXPECT_EQ(error_of({0, std::nullopt}, k222), "tp = 0: the tensor-parallel degree must be at least 1");
  EXPECT_EQ(error_of({1, Level::package}, Topology::parse("node=4,world=2", 8)),
            "tp_level package: the job's topology node=4,world=2 has no such level");
}

// The data topology divides the tensor level's fan-out by tp; a mesh of a
// world of one cannot split it.
TEST(Mesh, TheDataTopologyFactorsTheTensorGroupOut) {
  EXPECT_EQ((MeshShape{2, std::nullopt}).data_topology(k222), Topology({1, 2, 2}, k222.levels()));
  EXPECT_EQ((MeshShape{2, Level::node}).data_topology(k222), Topology({2, 1, 2}, k222.levels()));
  EXPECT_EQ((MeshShape{2, Level::world}).data_topology(k222), Topology({2, 2, 1}, k222.levels()));
  EXPECT_EQ((MeshShape{2, Level::node}).data_topology(Topology::parse("node=4,world=2", 8)).to_string(), "node=2,world=2");
  const auto world = self_world(Topology::flat(1));
  EXPECT_THROW(Mesh mesh(*world, MeshShape{2, std::nullopt}), ConfigError);  // 2 does not divide the world of one
}

// The simulator partitions the plan over the mesh's data-parallel ranks: a
// tp = 1 mesh on any level prices exactly what the world does; a bad one is
// the mesh's error.
TEST(Mesh, TheSimulatorTakesTheMeshShape) {
  SimInput in;
  in.model = gpt_preset("gpt-20b");
  in.system = load_system("frontier");
  in.ranks = 16;
  in.plan = fit_to(strategy_plan("hier3"), in.topology());
  const SimResult world = simulate(in);
  const Topology topo = in.topology();  // package=2,node=4,world=2
  ASSERT_EQ(topo.levels().size(), 3u);
  for (Level l : topo.levels()) {
    in.mesh = {1, l};
    const SimResult r = simulate(in);
    EXPECT_EQ(r.step_time_s, world.step_time_s) << level_name(l);
    EXPECT_EQ(r.bytes_per_level, world.bytes_per_level) << level_name(l);
    EXPECT_EQ(r.memory_total, world.memory_total) << level_name(l);
  }
  in.mesh = {3, std::nullopt};
  EXPECT_THROW(simulate(in), ConfigError);
  in.mesh = {2, std::nullopt};  // priced (sim_tensor_parallel_test.cc): the package level now carries the tensor group's all-reduces
  EXPECT_NE(simulate(in).bytes_per_level, world.bytes_per_level);
  in.engine = engine_profile("fsdp");  // an engine without tensor parallelism
  try {
    simulate(in);
    ADD_FAILURE() << "tp = 2 was priced for FSDP1";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.message(), "the fsdp engine has no tensor parallelism (data/engines: tensor_parallel); use tp = 1");
  }
}

}  // namespace
}  // namespace tierzero
