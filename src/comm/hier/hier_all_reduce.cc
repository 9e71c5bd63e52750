// Hierarchical all-reduce: reduce-scatter innermost hop first, then
// all-gather outermost hop first, over the count padded to a multiple of the
// world size (c = ceil(n / W) elements per rank). Because the all-gather
// retraces the reduce-scatter's splits, no reordering is needed. Its plan
// is never chunked: its local stages pad the input into the first buffer
// and copy the result out.
#include "comm/hier/hop_pipeline.h"

namespace tierzero {

void hier_all_reduce(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  const std::size_t es = dtype_size(t);
  if (s.hops.empty()) {
    s.mem->copy(recv, send, count * es);
    return;
  }
  const HopPlan& p = s.plan({HopCollective::all_reduce, count, es});
  const bool one_hop = s.hops.size() == 1;
  run_pipeline(s, p, [&](std::size_t st, std::size_t c) {
    return issue_stage(s, p, st, c, st == 0 ? send : s.out(p, st - 1, c), recv, t, one_hop ? op : ReduceOp::sum);
  }, [&](std::size_t st, std::size_t c) {
    if (st == 0) {  // the input, padded with zeros
      std::byte* padded = s.out(p, st, c);
      s.mem->copy(padded, send, count * es);
      s.mem->zero(padded + count * es, p.stage(st, c).out_bytes - count * es);
    } else {
      s.mem->copy(recv, s.out(p, st - 1, c), count * es);
      if (op == ReduceOp::avg) s.ops->divide(recv, count, t, s.group_size);
    }
  });
}

}  // namespace tierzero
