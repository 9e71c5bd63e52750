// qwZ: quantised (hierarchical) all-gather.
//
// The owner quantises its shard once (P = quant_packed_bytes(count) bytes:
// values + one scale per block); the packed shards, opaque bytes, go through
// the hierarchical all-gather (world -> node -> gpu), so every hop carries
// P bytes per shard instead of count * sizeof(t); receivers dequantise each
// shard into its place. Bytes per rank at level l: P * (f_l - 1) * P_>l.
#include "comm/flight_state.h"
#include "comm/hier/hop_state.h"

namespace tierzero {

void hier_quant_all_gather(HopState& s, const void* send, void* recv, std::size_t count, DType t, const QuantSpec& q) {
  const std::size_t packed = quant_packed_bytes(count, q);
  const std::size_t w = static_cast<std::size_t>(s.group_size);
  std::byte* mine = s.buffer(Scratch::packed_shard, packed);
  std::byte* all = s.buffer(Scratch::packed_bundle, packed * w);
  {
    QuantPhase quant(s);
    s.ops->quantize(send, t, count, q, mine);
  }
  {
    FlightBitsScope recorded(q.bits);  // the hops' flight records say what the bytes are
    hier_all_gather(s, mine, all, packed, DType::u8);
  }
  auto* out = static_cast<std::byte*>(recv);
  QuantPhase quant(s);
  for (std::size_t j = 0; j < w; ++j) s.ops->dequantize(all + j * packed, count, q, out + j * count * dtype_size(t), t);
}

}  // namespace tierzero
