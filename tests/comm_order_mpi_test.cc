// The collective order rule (comm/comm_schedule.h), checked by the
// checking communicator (tierzero/order_check.h): every strategy, with one
// communication queue or two (gathers, reductions), issues one sequence of
// collectives per queue, identical on every rank, through training steps
// and a checkpoint; and the checker itself finds ranks that disagree, a
// communicator issued on from two threads, and accepts two queues on
// their own communicators whatever their interleaving.
#include <gtest/gtest.h>

#include <thread>

#include "config_error.h"
#include "mpi_test_util.h"
#include "comm/comm_schedule.h"
#include "tierzero/sharded_trainer.h"
#include "tierzero/error.h"
#include "tierzero/mpi.h"
#include "tierzero/order_check.h"

namespace tierzero {
namespace {


TEST(CommOrder, EveryStrategyIssuesOneOrderOnEveryRank) {
  const TokenData data = TokenData::builtin();
  const Topology topo = test::standard_layout();
  auto world = mpi_world(topo);
  for (int queues : {1, 2})
  for (const char* model : test::kTinyModels)
  for (const char* name : {"ddp", "zero1", "zero2", "zero3", "zeropp", "mics", "hier3"}) {
    SCOPED_TRACE(model);
    SCOPED_TRACE(queues);
    TrainConfig cfg = test::tiny_run(1, 2, 16, 2, DType::bf16, model);
    cfg.comm_queues = queues;
    CheckedCommunicator checked(*world);
    ShardedTrainer trainer(cfg, fit_to(strategy_plan(name), topo), checked, data);
    checked.verify(std::string(name) + " construction");
    for (int step = 0; step < 2; ++step) {
      const std::size_t before = checked.issued();
      trainer.step();
      EXPECT_GT(checked.issued(), before) << name;  // at least the loss and norm
      EXPECT_NO_THROW(checked.verify(std::string(name) + " step " + std::to_string(step))) << name;
    }
    trainer.save_checkpoint(test::shared_temp_dir(), 0);
    EXPECT_NO_THROW(checked.verify(std::string(name) + " checkpoint")) << name;
    trainer.gather_master();
    EXPECT_NO_THROW(checked.verify(std::string(name) + " gather_master")) << name;
  }
}

TEST(CommOrder, TheCheckerFindsRanksThatIssueInAnotherOrder) {
  const int w = test::world_size();
  if (w < 2) GTEST_SKIP() << "needs two ranks";
  auto world = mpi_world(test::standard_layout());
  CheckedCommunicator checked(*world);
  auto a = checked.split(Level::world), b = checked.split(Level::world);
  float x = 1, y = 2;
  {  // non-blocking, so the two orders cannot deadlock on MPI
    Request first, second;
    if (world->rank() == 0) {
      first = a->iall_reduce(&x, &x, 1, DType::f32, ReduceOp::sum);
      second = b->iall_reduce(&y, &y, 1, DType::f32, ReduceOp::sum);
    } else {
      second = b->iall_reduce(&y, &y, 1, DType::f32, ReduceOp::sum);
      first = a->iall_reduce(&x, &x, 1, DType::f32, ReduceOp::sum);
    }
  }
  const std::string why = test::message_of<CommError>([&] { checked.verify("the test"); });
  EXPECT_NE(why.find("differ at #4"), std::string::npos) << why;  // after the queue's header and the two splits
  EXPECT_NE(why.find("rank 0 issued all_reduce on communicator 1 (4 bytes)"), std::string::npos) << why;
  EXPECT_NE(why.find("all_reduce on communicator 2 (4 bytes)"), std::string::npos) << why;
  // The same calls in the same order pass.
  a->all_reduce(&x, &x, 1, DType::f32, ReduceOp::sum);
  b->all_reduce(&y, &y, 1, DType::f32, ReduceOp::sum);
  EXPECT_NO_THROW(checked.verify("the second round"));
}

TEST(CommOrder, TheCheckerFindsACollectiveThatBypassesTheSchedule) {
  auto world = mpi_world(test::standard_layout());
  CheckedCommunicator checked(*world);
  CommSchedule schedule;
  float x = 1, y = 2;
  // One collective through the schedule, one straight from this thread: the
  // same order on every rank this time, but only by luck of timing.
  schedule.iall_reduce(checked, host_memory(), &x, &x, 1, DType::f32, ReduceOp::sum).wait();
  checked.all_reduce(&y, &y, 1, DType::f32, ReduceOp::sum);
  const std::string why = test::message_of<CommError>([&] { checked.verify("the test"); });
  EXPECT_NE(why.find("issued all_reduce on communicator 0 (4 bytes) from a second thread"), std::string::npos) << why;
  schedule.iall_reduce(checked, host_memory(), &x, &x, 1, DType::f32, ReduceOp::sum).wait();
  EXPECT_NO_THROW(checked.verify("the schedule alone"));
}

TEST(CommOrder, TwoQueuesOnTheirOwnCommunicatorsPassWhateverTheirInterleaving) {
  const int w = test::world_size();
  if (w < 2) GTEST_SKIP() << "needs two ranks";
  auto world = mpi_world(test::standard_layout());
  CheckedCommunicator checked(*world);
  auto a = checked.split(Level::world), b = checked.split(Level::world);
  CommSchedule qa, qb;
  float x[4] = {1, 2, 3, 4};
  // Each queue issues the same sequence on every rank; which queue goes first differs by rank.
  for (int round = 0; round < 3; ++round) {
    Request ra, rb;
    if ((world->rank() + round) % 2 == 0) {
      ra = qa.iall_reduce(*a, host_memory(), &x[0], &x[0], 1, DType::f32, ReduceOp::sum);
      rb = qb.iall_reduce(*b, host_memory(), &x[1], &x[1], 1, DType::f32, ReduceOp::sum);
    } else {
      rb = qb.iall_reduce(*b, host_memory(), &x[1], &x[1], 1, DType::f32, ReduceOp::sum);
      ra = qa.iall_reduce(*a, host_memory(), &x[0], &x[0], 1, DType::f32, ReduceOp::sum);
    }
    ra.wait(), rb.wait();
  }
  EXPECT_NO_THROW(checked.verify("two queues"));
  EXPECT_EQ(x[0], static_cast<float>(w * w * w));  // three sums over the ranks, each queue's in its order
  EXPECT_EQ(x[1], 2.0f * static_cast<float>(w * w * w));
}

}  // namespace
}  // namespace tierzero
