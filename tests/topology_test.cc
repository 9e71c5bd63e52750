#include "tierzero/topology.h"

#include <gtest/gtest.h>

#include "tierzero/error.h"
#include "tierzero/topology.h"

namespace tierzero {
namespace {

TEST(Topology, ParsesThreeLevels) {
  Topology t = Topology::parse("package=2,node=2,world=2", 8);
  EXPECT_EQ(t.size(), 8);
  EXPECT_EQ(t.levels(), (std::vector<Level>{Level::package, Level::node, Level::world}));
  EXPECT_EQ(t.to_string(), "package=2,node=2,world=2");
  // Node-contiguous numbering: rank 5 = package 1, node 0, world 1.
  EXPECT_EQ(t.coord(5, Level::package), 1);
  EXPECT_EQ(t.coord(5, Level::node), 0);
  EXPECT_EQ(t.coord(5, Level::world), 1);
  EXPECT_EQ(t.rank_of({1, 0, 1}), 5);
}

TEST(Topology, InfersWorld) {
  Topology t = Topology::parse("node=4", 8);
  EXPECT_EQ(t.fanout(Level::world), 2);
  EXPECT_EQ(t.fanout(Level::package), 1);
  EXPECT_EQ(t.to_string(), "node=4,world=2");
}

TEST(Topology, GroupsOfEveryLevel) {
  Topology t = Topology::parse("package=2,node=2,world=2", 8);
  EXPECT_EQ(t.group(Level::package, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(t.group(Level::node, 5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(t.group(Level::world, 5), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(t.cross_group(Level::package, 5), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(t.cross_group(Level::node, 5), (std::vector<int>{1, 5}));
  EXPECT_EQ(t.hop_group(Level::package, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(t.hop_group(Level::node, 5), (std::vector<int>{5, 7}));
  EXPECT_EQ(t.hop_group(Level::world, 5), (std::vector<int>{1, 5}));
}

TEST(Topology, SeparatingLevelIsOutermostDifference) {
  Topology t = Topology::parse("package=2,node=2,world=2", 8);
  EXPECT_EQ(t.separating_level(0, 1), Level::package);
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
  expect_error("package=2,node=2,world=2", 6, "has 8 ranks but the job has 6");
  expect_error("package=2,node=3", 8, "needs a multiple of 6 ranks but the job has 8");
  expect_error("package=2,,world=4", 8, "expected LEVEL=FANOUT");
  expect_error("package=x,world=4", 8, "must be a positive integer");
  expect_error("package=0,world=4", 8, "must be a positive integer");
  expect_error("rack=2,world=4", 8, "unknown level 'rack'");
  expect_error("node=2,package=4", 8, "innermost first");
  expect_error("node=2,node=4", 8, "innermost first");
  expect_error("", 8, "expected LEVEL=FANOUT");
  expect_error("package=2 world=4", 8, "must be a positive integer");
}

// The package level was once spelled "gpu": old topologies, bit lists and
// checkpoints still read, as the same values, and the user is told once.
TEST(Topology, ReadsTheOldSpellingOfPackageWithOneWarning) {
  testing::internal::CaptureStderr();
  const Topology old = Topology::parse("gpu=2,node=2,world=2", 8);
  const HopBits bits = parse_hop_bits("gpu=8,node=8,world=4");
  EXPECT_EQ(parse_level("gpu"), Level::package);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(old, Topology::parse("package=2,node=2,world=2", 8));
  EXPECT_NE(old, Topology::parse("node=2,world=4", 8));
  EXPECT_EQ(old.to_string(), "package=2,node=2,world=2");
  EXPECT_EQ(bits.to_string(), "package=8,node=8,world=4");
  const std::string warning = "level name 'gpu' is deprecated and read as 'package'";
  const std::size_t first = said.find(warning);
  ASSERT_NE(first, std::string::npos) << said;
  EXPECT_EQ(said.find(warning, first + 1), std::string::npos) << "warned more than once: " << said;
  EXPECT_EQ(level_name(Level::package), "package");
}

}  // namespace
}  // namespace tierzero
