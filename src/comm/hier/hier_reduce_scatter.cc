// Hierarchical reduce-scatter, innermost hop first.
//
// The input (rank order, outermost coordinate major) is first reordered
// innermost-coordinate-major (the plan's local stage). The hop at the
// innermost level then leaves each rank the part of the data whose
// innermost coordinate is its own, summed over its package; each further
// hop splits that part by the next coordinate, so the data shrinks by the
// fan-out at every hop and the slowest link carries only 1/(inner ranks) of
// it. Sums are taken at every hop; avg divides once by the world size at
// the end. A pipelined plan reduces each chunk of every rank's part this
// way (the same hops and the same sums; the transport may add in another
// order for another count, so floats agree to rounding, integers exactly).
#include "comm/hier/hop_pipeline.h"

namespace tierzero {

void hier_reduce_scatter(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  const std::size_t es = dtype_size(t);
  if (s.hops.empty()) {
    s.mem->copy(recv, send, count * es);
    return;
  }
  const HopPlan& p = s.plan({HopCollective::reduce_scatter, count, es});
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  const bool one_hop = s.hops.size() == 1;
  run_pipeline(s, p, [&](std::size_t st, std::size_t c) {
    return issue_stage(s, p, st, c, st == 0 ? in : s.out(p, st - 1, c), out + p.chunk_offset(c) * es, t, one_hop ? op : ReduceOp::sum);
  }, [&](std::size_t st, std::size_t c) {  // rank order: outermost major
    const std::size_t chunk = p.chunk_len(c) * es;
    reverse_axes(*s.mem, in + p.chunk_offset(c) * es, count * es, s.out(p, st, c), chunk, outer_first(s), chunk);
  });
  if (op == ReduceOp::avg && !one_hop) s.ops->divide(recv, count, t, s.group_size);
}

}  // namespace tierzero
