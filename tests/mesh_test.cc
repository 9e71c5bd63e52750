// The mesh (tierzero/mesh.h): at tp = 1 the data-parallel side is the
// world's; the tensor-parallel degree is checked against its level (the
// error names both), and tp > 1 factors the tensor group out of the data
// topology; the tensor groups partition the world; the simulator takes the
// mesh's shape and prices tp = 1 as before.
#include "tierzero/mesh.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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

// A tensor group is the ranks that differ only on the tensor level, within
// one run of tp there: the groups partition the world, each member's index
// is its tp_rank.
TEST(Mesh, TensorGroupsAreRunsOfTheTensorLevel) {
  EXPECT_EQ((MeshShape{2, Level::node}).tensor_group(k222, 0), (std::vector<int>{0, 2}));  // package is the fastest coordinate
  EXPECT_EQ((MeshShape{2, Level::node}).tensor_group(k222, 7), (std::vector<int>{5, 7}));
  const Topology n4w2 = Topology::parse("node=4,world=2", 8);
  EXPECT_EQ((MeshShape{2, std::nullopt}).tensor_group(n4w2, 3), (std::vector<int>{2, 3}));
  EXPECT_EQ((MeshShape{4, std::nullopt}).tensor_group(n4w2, 5), (std::vector<int>{4, 5, 6, 7}));
  for (const MeshShape& shape : {MeshShape{2, std::nullopt}, MeshShape{2, Level::node}, MeshShape{2, Level::world}}) {
    std::vector<int> seen(8, 0);
    for (int r = 0; r < 8; ++r) {
      const std::vector<int> g = shape.tensor_group(k222, r);
      ASSERT_EQ(g.size(), 2u);
      EXPECT_EQ(g[static_cast<std::size_t>(shape.tp_rank(k222, r))], r);
      for (int m : g) EXPECT_EQ(shape.tensor_group(k222, m), g);
      ++seen[static_cast<std::size_t>(g.front())];
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 2), 4);  // four groups of two
  }
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
