// qgZ generalised to L levels: quantised hierarchical reduce-scatter.
//
// The input is converted to fp32 and reordered innermost-coordinate-major
// (as in hier_reduce_scatter.cc). At each hop, innermost first, the current
// data (D elements) is cut into f_l contiguous pieces, one per member of the
// hop group; each piece is quantised with that hop's bits (or converted to
// the tensor's type when the hop is unquantised), exchanged by all-to-all,
// and the f_l received pieces are dequantised and summed in fp32 in member
// order. After the last hop a rank holds the sum over all W ranks of exactly
// the chunk a plain reduce-scatter gives it; avg divides by W once.
// Bytes per rank at level l: (f_l - 1) * P_l(count * P_>l), where P_l(m) is
// quant_packed_bytes(m) at the hop's bits, or m * sizeof(t) unquantised.
#include <algorithm>

#include "comm/flight_state.h"
#include "comm/hier/hop_state.h"

namespace tierzero {

namespace {
// Sends the f pieces of `acc` (piece elements each) over `hop` and writes
// their sum over the hop group into `out` (piece elements, fp32).
void exchange_and_sum(HopState& s, std::size_t h, const float* acc, std::size_t piece, int bits, DType t,
                      const QuantSpec& q, float* out) {
  ElementOps& ops = *s.ops;
  const int f = s.fanout(h);
  const FlightBitsScope recorded(bits);
  s.mem->zero(out, piece * sizeof(float));
  if (bits == 16) {
    const std::size_t esize = dtype_size(t);
    std::byte* send = s.buffer(Scratch::hop_send, piece * f * esize);
    std::byte* recv = s.buffer(Scratch::hop_recv, piece * f * esize);
    ops.from_f32(t, acc, send, piece * f);
    s.hop(h)->all_to_all(send, recv, piece, t);
    for (int j = 0; j < f; ++j) ops.add_to_f32(t, recv + j * piece * esize, out, piece);
    return;
  }
  QuantSpec qs = q;
  qs.bits = bits;
  const std::size_t packed = quant_packed_bytes(piece, qs);
  std::byte* send = s.buffer(Scratch::hop_send, packed * f);
  std::byte* recv = s.buffer(Scratch::hop_recv, packed * f);
  {
    QuantPhase quant(s);
    for (int j = 0; j < f; ++j) ops.quantize(acc + j * piece, DType::f32, piece, qs, send + j * packed);
  }
  s.hop(h)->all_to_all(send, recv, packed, DType::u8);
  QuantPhase quant(s);
  for (int j = 0; j < f; ++j) ops.dequantize_add(recv + j * packed, piece, qs, out);
}
}  // namespace

void hier_quant_reduce_scatter(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                               const HopBits& bits, const QuantSpec& q) {
  const std::size_t k = s.hops.size();
  std::size_t cur = count * static_cast<std::size_t>(s.group_size);
  // fp32 copy of the input, innermost coordinate major.
  auto* as_f32 = reinterpret_cast<float*>(s.buffer(Scratch::f32_input, cur * sizeof(float)));
  auto* acc = reinterpret_cast<float*>(s.buffer(Scratch::f32_sum, cur * sizeof(float)));
  s.ops->to_f32(t, send, as_f32, cur);
  reverse_axes(*s.mem, reinterpret_cast<const std::byte*>(as_f32), reinterpret_cast<std::byte*>(acc), outer_first(s), count * sizeof(float));
  float* out = as_f32;
  for (std::size_t h = 0; h < k; ++h) {
    cur /= s.fanout(h);
    exchange_and_sum(s, h, acc, cur, bits.at_hop(s.levels[h]), t, q, out);
    std::swap(acc, out);
  }
  if (op == ReduceOp::avg) s.ops->divide(acc, count, DType::f32, s.group_size);
  s.ops->from_f32(t, acc, recv, count);
}

}  // namespace tierzero
