#include "tierzero/topology.h"

#include <gtest/gtest.h>

#include "tierzero/error.h"

namespace tierzero {
namespace {

TEST(Topology, ParsesThreeLevels) {
  Topology t = Topology::parse("gpu=2,node=2,world=2", 8);
  EXPECT_EQ(t.size(), 8);
  EXPECT_EQ(t.levels(), (std::vector<Level>{Level::gpu, Level::node, Level::world}));
  EXPECT_EQ(t.to_string(), "gpu=2,node=2,world=2");
  // Node-contiguous numbering: rank 5 = gpu 1, node 0, world 1.
  EXPECT_EQ(t.coord(5, Level::gpu), 1);
  EXPECT_EQ(t.coord(5, Level::node), 0);
  EXPECT_EQ(t.coord(5, Level::world), 1);
  EXPECT_EQ(t.rank_of({1, 0, 1}), 5);
}

TEST(Topology, InfersWorld) {
  Topology t = Topology::parse("node=4", 8);
  EXPECT_EQ(t.fanout(Level::world), 2);
  EXPECT_EQ(t.fanout(Level::gpu), 1);
  EXPECT_EQ(t.to_string(), "node=4,world=2");
}

TEST(Topology, GroupsOfEveryLevel) {
  Topology t = Topology::parse("gpu=2,node=2,world=2", 8);
  EXPECT_EQ(t.group(Level::gpu, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(t.group(Level::node, 5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(t.group(Level::world, 5), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(t.cross_group(Level::gpu, 5), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(t.cross_group(Level::node, 5), (std::vector<int>{1, 5}));
  EXPECT_EQ(t.hop_group(Level::gpu, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(t.hop_group(Level::node, 5), (std::vector<int>{5, 7}));
  EXPECT_EQ(t.hop_group(Level::world, 5), (std::vector<int>{1, 5}));
}

TEST(Topology, SeparatingLevelIsOutermostDifference) {
  Topology t = Topology::parse("gpu=2,node=2,world=2", 8);
  EXPECT_EQ(t.separating_level(0, 1), Level::gpu);
  EXPECT_EQ(t.separating_level(0, 3), Level::node);
  EXPECT_EQ(t.separating_level(1, 4), Level::world);
  EXPECT_EQ(t.separating_level(3, 7), Level::world);
}

void expect_error(const char* spec, int ranks, const char* fragment) {
  try {
    Topology::parse(spec, ranks);
    FAIL() << spec << " was accepted";
  } catch (const TopologyError& e) {
    EXPECT_NE(e.message().find(fragment), std::string::npos) << e.message();
  }
}

TEST(Topology, RejectsBadLayouts) {
  expect_error("gpu=2,node=2,world=2", 6, "has 8 ranks but the job has 6");
  expect_error("gpu=2,node=3", 8, "needs a multiple of 6 ranks but the job has 8");
  expect_error("gpu=2,,world=4", 8, "expected LEVEL=FANOUT");
  expect_error("gpu=x,world=4", 8, "must be a positive integer");
  expect_error("gpu=0,world=4", 8, "must be a positive integer");
  expect_error("rack=2,world=4", 8, "unknown level 'rack'");
  expect_error("node=2,gpu=4", 8, "innermost first");
  expect_error("node=2,node=4", 8, "innermost first");
  expect_error("", 8, "expected LEVEL=FANOUT");
  expect_error("gpu=2 world=4", 8, "must be a positive integer");
}

}  // namespace
}  // namespace tierzero
