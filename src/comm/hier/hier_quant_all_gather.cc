// qwZ: quantised (hierarchical) all-gather.
//
// The owner quantises its shard once (P = quant_packed_bytes(count) bytes:
// values + one scale per block); the packed shards, opaque bytes, go through
// the hierarchical all-gather's hops (world -> node -> gpu), so every hop
// carries P bytes per shard instead of count * sizeof(t); receivers
// dequantise each shard. The plan's stages: quantise, the hops, then
// reorder the bundle into rank order and dequantise. A pipelined plan does
// this per chunk of whole quantisation blocks, so each block, and so each
// value, is the unchunked collective's.
#include "comm/hier/hop_pipeline.h"

namespace tierzero {

void hier_quant_all_gather(HopState& s, const void* send, void* recv, std::size_t count, DType t, const QuantSpec& q) {
  const std::size_t es = dtype_size(t), w = static_cast<std::size_t>(s.group_size), k = s.hops.size();
  const HopPlan& p = s.plan({HopCollective::all_gather_quantized, count, es, q});
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  run_pipeline(s, p, [&](std::size_t st, std::size_t c) {
    return issue_stage(s, p, st, c, s.out(p, st - 1, c), nullptr, DType::u8);
  }, [&](std::size_t st, std::size_t c) {
    const std::size_t len = p.chunk_len(c), off = p.chunk_offset(c);
    if (st == 0) {
      QuantPhase quant(s);
      s.ops->quantize(in + off * es, t, len, q, s.out(p, st, c));
      return;
    }
    const std::size_t packed = quant_packed_bytes(len, q);
    std::byte* all = s.out(p, st, c);  // every rank's packed chunk, in rank order
    if (k >= 2) reverse_axes(*s.mem, s.out(p, st - 1, c), all, inner_first(s), packed);  // from innermost coordinate major
    if (k == 0) s.mem->copy(all, s.out(p, st - 1, c), packed);
    QuantPhase quant(s);
    for (std::size_t j = 0; j < w; ++j) s.ops->dequantize(all + j * packed, len, q, out + (j * count + off) * es, t);
  });
}

}  // namespace tierzero
