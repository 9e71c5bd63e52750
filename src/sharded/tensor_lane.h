// The tensor-parallel group's collectives as the engine runs them for the
// model (model/gpt.h's TpGroup): queued on a schedule (comm/comm_schedule.h),
// so the members issue them in one order, and the model can start one and
// compute while it runs. Where collectives of different communicators may
// run at once (MPI: Backend::concurrent_queues) the schedule is the group's
// own, apart from the data-parallel queues and on its own executor thread.
// Where they may not (NCCL) it is the engine's one schedule, given to the
// lane: the training thread queues every collective, tensor and data
// parallel, in program order, the same on every rank, and a tensor
// collective waits for the jobs queued before it (the next unit's
// prefetch). Each is recorded in the flight recorder's tensor phase, tagged
// with the unit the rank computes, and charged to CommKind::tensor.
//
// Ownership: borrows the group, the memory and a given schedule, which must
// outlive it; the buffers of a collective must stay untouched until it is
// done. Threading: the training thread only.
#pragma once
#include <cstddef>
#include <memory>

#include "comm/comm_schedule.h"
#include "core/memory.h"
#include "tierzero/communicator.h"

namespace tierzero {

class TensorLane {
 public:
  // `shared`: the engine's schedule to queue on, or null for one of the lane's own.
  TensorLane(Communicator& group, Memory& mem, CommSchedule* shared);
  // Whether the lane has a schedule (and an executor clock) of its own.
  bool owns_schedule() const { return own_ != nullptr; }

  // Queued, and waited for.
  void sum(float* buf, std::size_t n);
  void all_gather(const float* send, float* recv, std::size_t n);
  void reduce_scatter(const float* send, float* recv, std::size_t n);
  // Queued; finish() waits for it. At most one started at a time
  // (ConfigError for a second before finish()).
  void start_sum(float* buf, std::size_t n);
  void start_all_gather(const float* send, float* recv, std::size_t n);
  void start_reduce_scatter(const float* send, float* recv, std::size_t n);
  void finish();

  const ExecClock& clock() { return schedule_.clock(); }
  // The time the lane's own schedule kept the training thread queuing (0 with a shared one, whose owner counts it).
  double submit_blocked_seconds() const { return own_ ? own_->submit_blocked_seconds() : 0.0; }

 private:
  // Queues the collective `queue` posts, tagged for the flight recorder.
  template <class Queue>
  void start(Queue&& queue);
  Communicator& group_;
  Memory& mem_;
  std::unique_ptr<CommSchedule> own_;
  CommSchedule& schedule_;
  Request pending_;
  bool started_ = false;
};

}  // namespace tierzero
