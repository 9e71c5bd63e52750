// The tensor-parallel group's collectives as the engine runs them for the
// model (model/gpt.h's TpGroup): queued on a schedule of the group's own
// (comm/comm_schedule.h), so the members issue them in one order, apart
// from the data-parallel queues and on their own executor thread, which
// lets the model start one and compute while it runs. Each is recorded in
// the flight recorder's tensor phase, tagged with the unit the rank
// computes; the executor's clock charges them to CommKind::tensor.
//
// Ownership: borrows the group and the memory, which must outlive it; the
// buffers of a collective must stay untouched until it is done. Threading:
// the training thread only.
#pragma once
#include <cstddef>

#include "comm/comm_schedule.h"
#include "core/memory.h"
#include "tierzero/communicator.h"

namespace tierzero {

class TensorLane {
 public:
  TensorLane(Communicator& group, Memory& mem);

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
  double submit_blocked_seconds() const { return schedule_.submit_blocked_seconds(); }

 private:
  // Queues the collective `queue` posts, tagged for the flight recorder.
  template <class Queue>
  void start(Queue&& queue);
  Communicator& group_;
  Memory& mem_;
  CommSchedule schedule_;
  Request pending_;
  bool started_ = false;
};

}  // namespace tierzero
