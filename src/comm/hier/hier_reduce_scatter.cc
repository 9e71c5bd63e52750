// Hierarchical reduce-scatter, innermost hop first.
//
// The input (rank order, outermost coordinate major) is first reordered
// innermost-coordinate-major. The hop at the innermost level then leaves each
// rank the part of the data whose innermost coordinate is its own, summed
// over its package; each further hop splits that part by the next
// coordinate, so the data shrinks by the fan-out at every hop and the
// slowest link carries only 1/(inner ranks) of it. Sums are taken at every
// hop; avg divides once by the world size at the end.
#include "comm/hier/hop_state.h"

namespace tierzero {

void hier_reduce_scatter(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  const std::size_t esize = dtype_size(t);
  const std::size_t k = s.hops.size();
  if (k == 0) {
    s.mem->copy(recv, send, count * esize);
    return;
  }
  if (k == 1) {
    s.hop(0)->reduce_scatter(send, recv, count, t, op);
    return;
  }
  std::size_t cur_count = count * static_cast<std::size_t>(s.group_size);
  std::byte* cur = s.buffer(Scratch::plain_even, cur_count * esize);
  reverse_axes(*s.mem, static_cast<const std::byte*>(send), cur, outer_first(s), count * esize);  // rank order: outermost major
  for (std::size_t h = 0; h < k; ++h) {
    cur_count /= s.fanout(h);
    void* next = h + 1 == k ? recv : s.buffer(plain_scratch(h + 1), cur_count * esize);
    s.hop(h)->reduce_scatter(cur, next, cur_count, t, ReduceOp::sum);
    cur = static_cast<std::byte*>(next);
  }
  if (op == ReduceOp::avg) s.ops->divide(recv, count, t, s.group_size);
}

}  // namespace tierzero
