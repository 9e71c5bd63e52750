// Gradient buckets. Units arrive in backward order; consecutive units are
// grouped into buckets of at least `bucket_bytes` (fixed at construction).
// A unit's fp32 gradient is packed, in the wire dtype, into its bucket
// laid out member-major (member j's slices of every unit of the bucket
// together), so one reduce-scatter leaves each rank the shards of all the
// bucket's units. A full bucket is reduced at once, asynchronously (qgZ
// when the plan quantises) and, when grads are replicated across the cross
// group (MiCS), all-reduced across it right after, both queued on the
// rank's CommSchedule; two buckets may be in flight. finish() waits for
// all and adds the mean into the fp32 grads partition. Gradients, buckets
// and the partition live in one Memory (core/memory.h). Waits are charged
// to `meter` (comm/exec_clock.h). One thread.
#pragma once
#include <vector>

#include "plan/grad_buckets.h"
#include "comm/exec_clock.h"
#include "comm/hier/hierarchy.h"
#include "plan/shard_layout.h"

namespace tierzero {

class GradReducer {
 public:
  // What the reducer takes from the plan.
  struct Spec {
    std::size_t bucket_bytes = 0;  // Plan::bucket_bytes (tierzero/plan.h): see grad_buckets
    bool replicated = false;       // grads kept whole on every rank (no partition): all-reduce, not reduce-scatter
    bool quantized = false;        // qgZ: per-hop bits, blockwise
    HopBits grad_bits;             // when quantized
    std::size_t quant_block = 256;
    static Spec of(const Plan& plan);
  };
  // reduce: hierarchy over group(grads) (the world when grads are replicated,
  // then buckets are all-reduced); cross: all-reduce over the cross group
  // after the reduce-scatter, or nullptr; schedule: the one `reduce` issues through.
  GradReducer(const GptLayout& layout, const Spec& spec, const ShardLayout& grads, DType wire, const std::vector<int>& order,
              Hierarchy& reduce, Communicator* cross, CommSchedule& schedule, float* grads_out, Memory& mem, ElementOps& ops,
              WaitMeter& meter);
  void add(int unit, const float* grad);
  void finish();
  std::size_t buffer_bytes() const;

 private:
  struct Bucket : GradBucket {              // units and count: elements per member
    std::vector<std::size_t> unit_offset;  // in elements, within one member's part
  };
  void launch(int b);
  void drain(int slot);
  const GptLayout& layout_;
  Memory& mem_;
  ElementOps& ops_;
  WaitMeter& meter_;
  Spec spec_;
  const ShardLayout& grads_;
  DType wire_;
  std::size_t wsize_;
  Hierarchy& reduce_;
  Communicator* cross_;
  CommSchedule& schedule_;
  float* out_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_, index_in_bucket_;
  MemArray<std::byte> send_[2], recv_[2];
  Request pending_[2], cross_pending_[2];
  int in_slot_[2] = {-1, -1};  // bucket occupying each buffer pair
};

}  // namespace tierzero
