// The shared wait of the communicator backends (comm/comm_timeout.h), on
// fake requests: a request that completes, a backend that reports an
// asynchronous error (as ncclCommGetAsyncError does), and a stalled request
// (an NCCL kernel waiting for a lost peer) that must end the job with exit
// code 3, a message naming the collective, and the backend's abort called.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "comm/comm_timeout.h"
#include "tierzero/mpi.h"

namespace tierzero {
namespace {

// World ranks 2 and 3 of node=2,world=2: a node-level group; this is rank 2.
class FakeCommunicator final : public Communicator {
 public:
  FakeCommunicator() : Communicator(Topology::parse("node=2,world=2", 4), {2, 3}, std::make_shared<Traffic>()) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Request iall_gather(const void*, void*, std::size_t, DType) override { return {}; }
  Request ireduce_scatter(const void*, void*, std::size_t, DType, ReduceOp) override { return {}; }
  Request iall_reduce(const void*, void*, std::size_t, DType, ReduceOp) override { return {}; }
  Request iall_to_all(const void*, void*, std::size_t, DType) override { return {}; }
  Request iall_to_allv(const void*, const std::vector<std::size_t>&, const std::vector<std::size_t>&, void*,
                       const std::vector<std::size_t>&, const std::vector<std::size_t>&, DType) override {
    return {};
  }
  Request ibroadcast(void*, std::size_t, DType, int) override { return {}; }
  void barrier() override {}
  std::unique_ptr<Communicator> split_by(int) override { return nullptr; }
};

const char* no_failure() { return nullptr; }
void abort_comms() { std::fprintf(stderr, "backend communicators aborted\n"); }

TEST(CommTimeout, AWaitReturnsWhenTheRequestCompletes) {
  set_comm_timeout(5);
  FakeCommunicator comm;
  int polls = 0;
  wait_polling(comm, "all_gather", [&] { return ++polls == 4; }, no_failure, abort_comms);
  EXPECT_EQ(polls, 4);
}

TEST(CommTimeout, AnAsynchronousBackendErrorIsACommError) {
  set_comm_timeout(0);  // no deadline: errors are still seen
  FakeCommunicator comm;
  try {
    wait_polling(comm, "reduce_scatter", [] { return false; }, [] { return "remote process exited or there was a network error"; },
                 abort_comms);
    FAIL() << "no CommError";
  } catch (const CommError& e) {
    EXPECT_NE(e.message().find("collective reduce_scatter failed: remote process exited"), std::string::npos) << e.message();
  }
}

TEST(CommTimeoutDeathTest, AStalledRequestEndsTheJobWithExitCode3) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  FakeCommunicator comm;
  EXPECT_EXIT(
      {
        set_comm_timeout(0.2);
        wait_polling(comm, "all_gather", [] { return false; }, no_failure, abort_comms);
      },
      testing::ExitedWithCode(3),
      "rank 2: collective all_gather on level node among ranks \\{2,3\\} did not complete within 0.2 s.*"
      "backend communicators aborted");
}

TEST(CommTimeout, NonFiniteOrNegativeTimeoutsAreRefused) {
  for (double bad : {-1.0, std::nan(""), HUGE_VAL}) EXPECT_THROW(set_comm_timeout(bad), ConfigError) << bad;
  EXPECT_NO_THROW(set_comm_timeout(0));
}

}  // namespace
}  // namespace tierzero
