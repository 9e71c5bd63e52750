// Hierarchical all-reduce: reduce-scatter innermost hop first, then
// all-gather outermost hop first, over the count padded to a multiple of the
// world size (c = ceil(n / W) elements per rank). Because the all-gather
// retraces the reduce-scatter's splits, no reordering is needed.
#include "comm/hier/hop_state.h"

namespace tierzero {

void hier_all_reduce(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  const std::size_t esize = dtype_size(t);
  const std::size_t k = s.hops.size();
  if (k <= 1) {
    if (k == 1) s.hop(0)->all_reduce(send, recv, count, t, op);
    else s.mem->copy(recv, send, count * esize);
    return;
  }
  const std::size_t w = static_cast<std::size_t>(s.group_size);
  const std::size_t per_rank = (count + w - 1) / w;
  std::size_t cur_count = per_rank * w;
  std::byte* cur = s.buffer(Scratch::plain_even, cur_count * esize);
  s.mem->copy(cur, send, count * esize);
  s.mem->zero(cur + count * esize, (cur_count - count) * esize);
  std::size_t turn = 0;  // buffers alternate: the input and output of each hop differ
  for (std::size_t h = 0; h < k; ++h) {
    cur_count /= s.fanout(h);
    std::byte* next = s.buffer(plain_scratch(++turn), cur_count * esize);
    s.hop(h)->reduce_scatter(cur, next, cur_count, t, ReduceOp::sum);
    cur = next;
  }
  for (std::size_t h = k; h-- > 0;) {
    std::byte* next = s.buffer(plain_scratch(++turn), cur_count * s.fanout(h) * esize);
    s.hop(h)->all_gather(cur, next, cur_count, t);
    cur = next;
    cur_count *= s.fanout(h);
  }
  s.mem->copy(recv, cur, count * esize);
  if (op == ReduceOp::avg) s.ops->divide(recv, count, t, s.group_size);
}

}  // namespace tierzero
