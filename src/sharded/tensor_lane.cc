#include "sharded/tensor_lane.h"

#include "tierzero/error.h"
#include "tierzero/flight_recorder.h"

namespace tierzero {

TensorLane::TensorLane(Communicator& group, Memory& mem, CommSchedule* shared)
    : group_(group), mem_(mem), own_(shared ? nullptr : std::make_unique<CommSchedule>(mem)), schedule_(shared ? *shared : *own_) {}

template <class Queue>
void TensorLane::start(Queue&& queue) {
  TZ_CHECK(!started_, ConfigError, "a tensor-parallel collective started before the last one finished");
  const FlightPhaseScope tagged(FlightPhase::tensor, flight_activity_unit());  // the tag the job is queued with
  pending_ = queue();
  started_ = true;
}

void TensorLane::finish() {
  if (!started_) return;
  started_ = false;
  pending_.wait();
}

void TensorLane::start_sum(float* buf, std::size_t n) {
  start([&] { return schedule_.iall_reduce(group_, mem_, buf, buf, n, DType::f32, ReduceOp::sum, CommKind::tensor); });
}

void TensorLane::start_all_gather(const float* send, float* recv, std::size_t n) {
  start([&] { return schedule_.iall_gather(group_, mem_, send, recv, n, DType::f32, CommKind::tensor); });
}

void TensorLane::start_reduce_scatter(const float* send, float* recv, std::size_t n) {
  start([&] { return schedule_.ireduce_scatter(group_, mem_, send, recv, n, DType::f32, ReduceOp::sum, CommKind::tensor); });
}

void TensorLane::sum(float* buf, std::size_t n) {
  start_sum(buf, n);
  finish();
}

void TensorLane::reduce_scatter(const float* send, float* recv, std::size_t n) {
  start_reduce_scatter(send, recv, n);
  finish();
}

void TensorLane::all_gather(const float* send, float* recv, std::size_t n) {
  start_all_gather(send, recv, n);
  finish();
}

}  // namespace tierzero
