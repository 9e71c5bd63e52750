#include "sharded/grad_reducer.h"

#include <algorithm>

#include "plan/engine_buffers.h"
#include "tierzero/flight_recorder.h"

namespace tierzero {

GradReducer::Spec GradReducer::Spec::of(const Plan& plan) {
  return {plan.bucket_bytes, !plan.grads, plan.quantized(), plan.grad_bits, plan.quant_block};
}

GradReducer::GradReducer(const GptLayout& layout, const Spec& spec, const ShardLayout& grads, DType wire,
                         const std::vector<int>& order, Hierarchy& reduce, Communicator* cross, CommSchedule& schedule,
                         float* grads_out, Memory& mem, ElementOps& ops, WaitMeter& meter)
    : layout_(layout), mem_(mem), ops_(ops), meter_(meter), spec_(spec), grads_(grads), wire_(wire), wsize_(dtype_size(wire)), reduce_(reduce), cross_(cross),
      schedule_(schedule), out_(grads_out) {
  bucket_of_.assign(layout.units().size(), -1);
  index_in_bucket_.assign(layout.units().size(), -1);
  const std::size_t g = static_cast<std::size_t>(grads.group_size);
  std::vector<GradBucket> buckets = grad_buckets(order, grads, wsize_, spec.bucket_bytes);
  const std::array<std::size_t, 2> counts = bucket_buffer_counts(buckets);
  for (GradBucket& gb : buckets) {
    Bucket& b = buckets_.emplace_back();
    static_cast<GradBucket&>(b) = std::move(gb);
    std::size_t offset = 0;
    for (int u : b.units) {
      bucket_of_[u] = static_cast<int>(buckets_.size()) - 1;
      index_in_bucket_[u] = static_cast<int>(b.unit_offset.size());
      b.unit_offset.push_back(offset);
      offset += grads.shard[u];
    }
  }
  for (int s = 0; s < 2; ++s) {
    send_[s].resize(mem, counts[s] * g * wsize_);
    recv_[s].resize(mem, counts[s] * wsize_);
  }
}

void GradReducer::add(int unit, const float* grad) {
  const int b = bucket_of_[unit];
  const Bucket& bucket = buckets_[b];
  const int slot = b % 2;
  const int k = index_in_bucket_[unit];
  if (k == 0 && in_slot_[slot] >= 0) drain(slot);  // the buffers still hold an older bucket
  in_slot_[slot] = b;
  const std::size_t n = layout_.units()[unit].numel, s = grads_.shard[unit];
  std::byte* send = send_[slot].data();
  for (int j = 0; j < grads_.group_size; ++j) {
    const std::size_t begin = static_cast<std::size_t>(j) * s;
    const std::size_t valid = begin >= n ? 0 : std::min(s, n - begin);
    std::byte* dst = send + (j * bucket.count + bucket.unit_offset[k]) * wsize_;
    ops_.from_f32(wire_, grad + begin, dst, valid);
    mem_.zero(dst + valid * wsize_, (s - valid) * wsize_);
  }
  if (static_cast<std::size_t>(k) + 1 == bucket.units.size()) launch(b);
}

void GradReducer::launch(int b) {
  const int slot = b % 2;
  const Bucket& bucket = buckets_[b];
  const FlightPhaseScope tagged(FlightPhase::reduction, bucket.units.back());  // the unit that filled the bucket
  void* recv = recv_[slot].data();
  if (spec_.replicated) {
    pending_[slot] = reduce_.iall_reduce(send_[slot].data(), recv, bucket.count, wire_, ReduceOp::avg);
  } else if (spec_.quantized) {
    QuantSpec q;  // its block and mode; the bits are per hop
    q.block = spec_.quant_block;
    pending_[slot] = reduce_.ireduce_scatter_quantized(send_[slot].data(), recv, bucket.count, wire_, ReduceOp::avg, spec_.grad_bits, q);
  } else {
    pending_[slot] = reduce_.ireduce_scatter(send_[slot].data(), recv, bucket.count, wire_, ReduceOp::avg);
  }
  if (cross_)
    cross_pending_[slot] = schedule_.iall_reduce(*cross_, mem_, recv, recv, bucket.count, wire_, ReduceOp::avg, CommKind::reduce);
}

void GradReducer::drain(int slot) {
  const int b = in_slot_[slot];
  in_slot_[slot] = -1;
  meter_.wait(WaitMeter::Wait::reduce, pending_[slot]);
  meter_.wait(WaitMeter::Wait::reduce, cross_pending_[slot]);
  const Bucket& bucket = buckets_[b];
  const std::byte* recv = recv_[slot].data();
  for (std::size_t k = 0; k < bucket.units.size(); ++k) {
    const int u = bucket.units[k];
    ops_.add_to_f32(wire_, recv + bucket.unit_offset[k] * wsize_, out_ + grads_.offset[u], grads_.shard[u]);
  }
}

void GradReducer::finish() {
  while (in_slot_[0] >= 0 || in_slot_[1] >= 0) {  // the older bucket first, on every rank alike
    const bool first = in_slot_[1] < 0 || (in_slot_[0] >= 0 && in_slot_[0] < in_slot_[1]);
    drain(first ? 0 : 1);
  }
}

std::size_t GradReducer::buffer_bytes() const { return send_[0].bytes() + send_[1].bytes() + recv_[0].bytes() + recv_[1].bytes(); }

}  // namespace tierzero
