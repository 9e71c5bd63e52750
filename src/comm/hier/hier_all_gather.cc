// Hierarchical all-gather, outermost hop first.
//
// After the hop at level l every rank holds the shards of all ranks that
// differ from it only at levels >= l. The outermost hop therefore moves one
// shard per peer across the slowest link; each inner hop moves the bundle
// gathered so far. The bundle is built innermost-coordinate-major, so one
// final axis reversal (the plan's local stage) puts the shards in rank
// order. A pipelined plan gathers each chunk of the shards this way, and
// the reversal puts each rank's chunk in its place: the bytes are the same.
#include "comm/hier/hop_pipeline.h"

namespace tierzero {

void hier_all_gather(HopState& s, const void* send, void* recv, std::size_t count, DType t) {
  const std::size_t es = dtype_size(t);
  if (s.hops.empty()) {
    s.mem->copy(recv, send, count * es);
    return;
  }
  const HopPlan& p = s.plan({HopCollective::all_gather, count, es});
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  run_pipeline(s, p, [&](std::size_t st, std::size_t c) {
    return issue_stage(s, p, st, c, st == 0 ? in + p.chunk_offset(c) * es : s.out(p, st - 1, c), recv, t);
  }, [&](std::size_t st, std::size_t c) {
    const std::size_t chunk = p.chunk_len(c) * es;
    reverse_axes(*s.mem, s.out(p, st - 1, c), chunk, out + p.chunk_offset(c) * es, count * es, inner_first(s), chunk);
  });
}

}  // namespace tierzero
