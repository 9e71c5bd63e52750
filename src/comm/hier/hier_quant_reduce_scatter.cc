// qgZ generalised to L levels: quantised hierarchical reduce-scatter.
//
// The input is reordered innermost-coordinate-major (as in
// hier_reduce_scatter.cc) and converted to fp32. At each hop, innermost
// first, the current data (D elements) is cut into f_l contiguous pieces,
// one per member of the hop group; each piece is quantised with that hop's
// bits (or converted to the tensor's type when the hop is unquantised),
// exchanged by all-to-all, and the f_l received pieces are dequantised and
// summed in fp32 in member order. After the last hop a rank holds the sum
// over all W ranks of exactly the chunk a plain reduce-scatter gives it;
// avg divides by W once.
// Bytes per rank at level l: (f_l - 1) * P_l(count * P_>l), where P_l(m) is
// quant_packed_bytes(m) at the hop's bits, or m * sizeof(t) unquantised.
//
// The plan's stages: local work before each hop (sum what the previous hop
// brought, or reorder the input before the first; pack the pieces), the
// hop's all-to-all, and after the last hop the result. A pipelined plan
// runs this per chunk of every rank's part; it is cut only when that part
// is whole quantisation blocks, so every block and every sum is the
// unchunked collective's: the result is bit for bit the same.
#include "comm/hier/hop_pipeline.h"

namespace tierzero {

namespace {
// Elements of each piece hop h exchanges, for a chunk of `len` per rank.
std::size_t piece_elements(const HopState& s, std::size_t h, std::size_t len) {
  std::size_t cur = len * static_cast<std::size_t>(s.group_size);
  for (std::size_t i = 0; i <= h; ++i) cur /= static_cast<std::size_t>(s.fanout(i));
  return cur;
}

QuantSpec at_bits(QuantSpec q, int bits) {
  q.bits = bits;
  return q;
}
}  // namespace

void hier_quant_reduce_scatter(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                               const HopBits& bits, const QuantSpec& q) {
  const std::size_t es = dtype_size(t), k = s.hops.size(), w = static_cast<std::size_t>(s.group_size);
  const HopPlan& p = s.plan({HopCollective::reduce_scatter_quantized, count, es, q, bits});
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  ElementOps& ops = *s.ops;
  run_pipeline(s, p, [&](std::size_t st, std::size_t c) {
    return issue_stage(s, p, st, c, s.out(p, st - 1, c), nullptr, p.stage(st, c).bits == 16 ? t : DType::u8);
  }, [&](std::size_t st, std::size_t c) {
    const std::size_t h = st / 2, len = p.chunk_len(c), off = p.chunk_offset(c);
    float* sum = reinterpret_cast<float*>(s.buffer(Scratch::quant_first, len * w * sizeof(float)));
    if (h == 0) {  // every rank's chunk, innermost coordinate major, in fp32
      std::byte* reordered = s.buffer(Scratch::quant_first, len * w * es);
      sum = reinterpret_cast<float*>(s.buffer(Scratch::quant_second, len * w * sizeof(float)));
      reverse_axes(*s.mem, in + off * es, count * es, reordered, len * es, outer_first(s), len * es);
      ops.to_f32(t, reordered, sum, len * w);
    } else {  // the sum of the pieces hop h - 1 brought
      const HopStage& g = p.stage(st - 1, c);
      const std::size_t piece = piece_elements(s, h - 1, len);
      const std::byte* got = s.out(p, st - 1, c);
      s.mem->zero(sum, piece * sizeof(float));
      if (g.bits == 16) {
        for (int j = 0; j < s.fanout(h - 1); ++j) ops.add_to_f32(t, got + j * g.peer_bytes(), sum, piece);
      } else {
        QuantPhase quant(s);
        for (int j = 0; j < s.fanout(h - 1); ++j) ops.dequantize_add(got + j * g.peer_bytes(), piece, at_bits(q, g.bits), sum);
      }
    }
    if (h == k) {
      if (op == ReduceOp::avg) ops.divide(sum, len, DType::f32, s.group_size);
      ops.from_f32(t, sum, out + off * es, len);
      return;
    }
    const HopStage& next = p.stage(st + 1, c);  // pack hop h's pieces
    const std::size_t piece = piece_elements(s, h, len);
    std::byte* packed = s.out(p, st, c);
    if (next.bits == 16) {
      ops.from_f32(t, sum, packed, piece * static_cast<std::size_t>(s.fanout(h)));
      return;
    }
    QuantPhase quant(s);
    for (int j = 0; j < s.fanout(h); ++j) ops.quantize(sum + j * piece, DType::f32, piece, at_bits(q, next.bits), packed + j * next.peer_bytes());
  });
}

}  // namespace tierzero
