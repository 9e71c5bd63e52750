// A rank's ordered communication schedule: one FIFO of collective jobs and
// one executor thread that issues them, one job at a time, in the order
// they were queued.
//
// Why: NCCL (and MPI) require the collectives of a communicator to be
// issued in the same order on every member, and a rank that interleaves
// several communicators must interleave them alike on every rank, or two
// ranks can each wait for a collective the other has not issued yet (a
// hang). The sharding engine therefore queues every collective of a step
// (forward and backward gathers, hpZ/package gathers, bucket reductions,
// the MiCS cross all-reduce, the loss/norm and checkpoint scalars) from its
// one compute thread, in program order, into one schedule; the executor
// issues them in that order. Because every rank runs the same program, the
// issue order is the same everywhere (tierzero/order_check.h verifies it).
//
// Jobs are plain data in a fixed ring (kSlots): queuing allocates nothing,
// and queuing into a full ring waits for the oldest job to finish. Each job
// first orders the executor's memory work after the queuing thread's work
// so far (Memory::mark / wait_for), then runs its collectives (each waited
// for, with the --comm-timeout deadline), then fences, so a job's results
// are complete when its Request is. After a job fails the later ones are
// not run (the ranks are out of step) and every wait rethrows the failure.
//
// Each schedule is one queue of the flight recorder (tierzero/flight_recorder.h):
// its jobs carry the queuing thread's flight tag and queueing time, and
// the collectives a job runs are recorded with the queue and job number
// (the ticket, the same on every rank).
//
// Ownership: owns its thread; the destructor runs what is queued, then
// joins. Communicators, memories and buffers named by queued jobs must
// outlive the jobs. Threading: submit from one thread (the order of
// submission is the order of issue); Requests may be waited for anywhere.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "comm/exec_clock.h"
#include "tierzero/communicator.h"
#include "core/memory.h"

namespace tierzero {

struct CommJob;  // src/comm/comm_job.h

class CommSchedule {
 public:
  static constexpr std::uint64_t kSlots = 64;
  // `mem`: the memory whose per-thread state (on a GPU, the executor's
  // stream and context) is prepared now, before any collective is queued.
  explicit CommSchedule(Memory& mem = host_memory());
  ~CommSchedule();
  CommSchedule(const CommSchedule&) = delete;
  CommSchedule& operator=(const CommSchedule&) = delete;

  // comm's collectives of the same name, queued; buffers live in `mem`;
  // the executor's clock charges them to `kind`.
  Request iall_reduce(Communicator& comm, Memory& mem, const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                      CommKind kind = CommKind::control);
  Request iall_gather(Communicator& comm, Memory& mem, const void* send, void* recv, std::size_t count, DType t,
                      CommKind kind = CommKind::control);
  Request ireduce_scatter(Communicator& comm, Memory& mem, const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                          CommKind kind = CommKind::control);
  // Queues a prepared job (the hierarchical collectives use this), after
  // marking the calling thread's work on job.mem.
  Request submit(CommJob job);

  // Used by the Requests submit() returns.
  void wait(std::uint64_t ticket);
  bool done(std::uint64_t ticket);

  // Where the executor's time goes (comm/exec_clock.h).
  ExecClock& clock() { return clock_; }
  // Seconds the submitting thread has spent waiting for a free slot.
  double submit_blocked_seconds() const { return submit_blocked_s_; }

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable work_, finished_;
  std::unique_ptr<CommJob[]> ring_;  // kSlots jobs
  std::uint64_t queued_ = 0;     // tickets handed out
  std::uint64_t completed_ = 0;  // jobs finished (FIFO, so ticket t is done when completed_ > t)
  std::uint64_t failed_ticket_ = ~std::uint64_t{0};
  std::exception_ptr error_;
  bool stopping_ = false;
  ExecClock clock_;
  double submit_blocked_s_ = 0;  // the submitting thread's
  int flight_queue_;             // this queue's number in the flight recorder
  std::thread executor_;
};

}  // namespace tierzero
