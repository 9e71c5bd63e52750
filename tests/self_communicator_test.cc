// A world of one (self_world): every collective gives the member's own
// values, in place or not; splits stay worlds of one; a topology of more
// than one rank is refused.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "tierzero/communicator.h"
#include "tierzero/error.h"

namespace tierzero {
namespace {

TEST(SelfCommunicator, EveryCollectiveIsTheMembersOwnValues) {
  auto world = self_world(Topology::flat(1));
  ASSERT_EQ(world->size(), 1);
  ASSERT_EQ(world->rank(), 0);
  std::vector<float> send(100), recv(100, -1.0f);
  std::iota(send.begin(), send.end(), 1.0f);
  world->all_gather(send.data(), recv.data(), 100, DType::f32);
  EXPECT_EQ(recv, send);
  recv.assign(100, -1.0f);
  world->reduce_scatter(send.data(), recv.data(), 100, DType::f32, ReduceOp::avg);
  EXPECT_EQ(recv, send);
  recv.assign(100, -1.0f);
  world->all_reduce(send.data(), recv.data(), 100, DType::f32, ReduceOp::sum);
  EXPECT_EQ(recv, send);
  recv.assign(100, -1.0f);
  world->all_to_all(send.data(), recv.data(), 100, DType::f32);
  EXPECT_EQ(recv, send);
  recv.assign(100, -1.0f);
  world->iall_to_allv(send.data(), {40}, {10}, recv.data(), {40}, {50}, DType::f32).wait();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(recv[i], i >= 50 && i < 90 ? send[i - 40] : -1.0f) << i;
  std::vector<float> in_place = send;  // send and receive buffers the same
  world->all_reduce(in_place.data(), in_place.data(), 100, DType::f32, ReduceOp::avg);
  EXPECT_EQ(in_place, send);
  world->broadcast(in_place.data(), 100, DType::f32, 0);
  EXPECT_EQ(in_place, send);
  world->barrier();
  EXPECT_THROW(world->broadcast(in_place.data(), 100, DType::f32, 1), CommError);
  EXPECT_THROW(world->all_reduce(send.data(), recv.data(), 4, DType::i8, ReduceOp::avg), CommError);
  // Nothing crosses a link: no traffic is counted.
  for (Level l : kAllLevels) EXPECT_EQ(world->traffic().bytes(l), 0u) << level_name(l);
}

TEST(SelfCommunicator, SplitsAreWorldsOfOneAndLargerTopologiesAreRefused) {
  auto world = self_world(Topology::parse("package=1,node=1,world=1", 1));
  for (Level l : kAllLevels) {
    auto g = world->split(l);
    EXPECT_EQ(g->size(), 1);
    EXPECT_EQ(g->world_rank(0), 0);
    EXPECT_EQ(g->shared_traffic(), world->shared_traffic());
  }
  try {
    self_world(Topology::flat(2));
    FAIL() << "a world of one accepted two ranks";
  } catch (const TopologyError& e) {
    EXPECT_NE(e.message().find("not started by an MPI launcher (mpirun, mpiexec, srun)"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace tierzero
