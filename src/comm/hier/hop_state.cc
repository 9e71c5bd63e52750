#include "comm/hier/hop_state.h"

namespace tierzero {

std::byte* HopState::buffer(Scratch which, std::size_t bytes) {
  auto& b = scratch[static_cast<int>(which)];
  if (b.size() < bytes) {
    mem->fence();  // queued work may still use the smaller buffer
    b.resize(*mem, bytes);
  }
  return b.data();
}

std::size_t HopState::scratch_bytes() const {
  std::size_t t = 0;
  for (const auto& b : scratch) t += b.size();
  return t;
}

void reverse_axes(Memory& mem, const std::byte* src, std::byte* dst, const Dims& dims, std::size_t block) {
  const std::size_t k = dims.k;
  // In dst, axis j has stride prod(dims[0..j-1]) blocks.
  std::array<std::size_t, kNumLevels> dst_stride{};
  std::array<int, kNumLevels> idx{};
  std::size_t total = 1;
  for (std::size_t j = 0; j < k; ++j) {
    dst_stride[j] = total;
    total *= static_cast<std::size_t>(dims.d[j]);
  }
  std::size_t off = 0;  // dst offset (in blocks) of the current src block
  for (std::size_t s = 0; s < total; ++s) {
    mem.copy(dst + off * block, src + s * block, block);
    for (std::size_t j = k; j-- > 0;) {  // odometer over src, minor axis fastest
      off += dst_stride[j];
      if (++idx[j] < dims.d[j]) break;
      off -= dst_stride[j] * static_cast<std::size_t>(dims.d[j]);
      idx[j] = 0;
    }
  }
}

Dims inner_first(const HopState& s) {
  Dims d;
  d.k = s.hops.size();
  for (std::size_t h = 0; h < d.k; ++h) d.d[h] = s.fanout(h);
  return d;
}

Dims outer_first(const HopState& s) {
  Dims d;
  d.k = s.hops.size();
  for (std::size_t h = 0; h < d.k; ++h) d.d[h] = s.fanout(d.k - 1 - h);
  return d;
}

}  // namespace tierzero
