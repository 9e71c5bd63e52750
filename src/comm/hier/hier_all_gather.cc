// Hierarchical all-gather, outermost hop first.
//
// After the hop at level l every rank holds the shards of all ranks that
// differ from it only at levels >= l. The outermost hop therefore moves one
// shard per peer across the slowest link; each inner hop moves the bundle
// gathered so far. The bundle is built innermost-coordinate-major, so one
// final axis reversal puts the shards in rank order.
#include "comm/hier/hop_state.h"

namespace tierzero {

void hier_all_gather(HopState& s, const void* send, void* recv, std::size_t count, DType t) {
  const std::size_t shard = count * dtype_size(t);
  const std::size_t k = s.hops.size();
  if (k == 0) {
    s.mem->copy(recv, send, shard);
    return;
  }
  if (k == 1) {
    s.hop(0)->all_gather(send, recv, count, t);
    return;
  }
  const void* cur = send;
  std::size_t cur_count = count;
  for (std::size_t h = k; h-- > 0;) {
    std::byte* next = s.buffer(plain_scratch(h), cur_count * s.fanout(h) * dtype_size(t));
    s.hop(h)->all_gather(cur, next, cur_count, t);
    cur = next;
    cur_count *= s.fanout(h);
  }
  // The bundle is innermost coordinate major.
  reverse_axes(*s.mem, static_cast<const std::byte*>(cur), static_cast<std::byte*>(recv), inner_first(s), shard);
}

}  // namespace tierzero
