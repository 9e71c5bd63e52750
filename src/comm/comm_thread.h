// One worker thread that runs queued collective jobs in FIFO order. Used to
// make multi-step (hierarchical) collectives non-blocking: because every
// rank queues in the same order and the worker runs jobs in that order,
// the underlying collectives are issued in the same order everywhere.
// Jobs are plain data in a fixed ring (kSlots): queuing allocates nothing,
// and queuing into a full ring waits for the oldest job to finish.
// submit() may be called from any thread; the destructor drains the queue.
#pragma once
#include <array>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>

#include "tierzero/hierarchy.h"
#include "tierzero/memory.h"

namespace tierzero {

struct HopState;

// A queued collective: on the worker, the state's memory waits for
// `after` (the submitter's work), `run` is applied to the arguments, and
// the memory is fenced.
struct CommJob {
  void (*run)(const CommJob&) = nullptr;
  HopState* state = nullptr;
  MemMark after;
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  DType type = DType::f32;
  ReduceOp op = ReduceOp::sum;
  HopBits bits;
  QuantSpec quant;
};

class CommThread {
 public:
  static constexpr std::uint64_t kSlots = 64;
  CommThread();
  ~CommThread();
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;
  // Queues the job; the Request completes when it has run (rethrowing the
  // job's exception on wait()).
  Request submit(const CommJob& job);
  void wait(std::uint64_t ticket);
  bool done(std::uint64_t ticket);

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable work_, finished_;
  std::array<CommJob, kSlots> ring_;
  std::uint64_t queued_ = 0;     // tickets handed out
  std::uint64_t completed_ = 0;  // jobs finished (FIFO, so ticket t is done when completed_ > t)
  std::uint64_t failed_ticket_ = ~std::uint64_t{0};
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace tierzero
