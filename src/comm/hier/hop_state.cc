#include "comm/hier/hop_state.h"

#include <cstring>

namespace tierzero {

std::byte* HopState::buffer(int which, std::size_t bytes) {
  auto& b = scratch[which];
  if (b.size() < bytes) b.resize(bytes);
  return b.data();
}

void reverse_axes(const std::byte* src, std::byte* dst, const std::vector<int>& dims, std::size_t block) {
  const std::size_t k = dims.size();
  // In dst, axis j has stride prod(dims[0..j-1]) blocks.
  std::vector<std::size_t> dst_stride(k, 1);
  for (std::size_t j = 1; j < k; ++j) dst_stride[j] = dst_stride[j - 1] * dims[j - 1];
  std::size_t total = 1;
  for (int d : dims) total *= d;
  std::vector<int> idx(k, 0);
  std::size_t off = 0;  // dst offset (in blocks) of the current src block
  for (std::size_t s = 0; s < total; ++s) {
    std::memcpy(dst + off * block, src + s * block, block);
    for (std::size_t j = k; j-- > 0;) {  // odometer over src, minor axis fastest
      off += dst_stride[j];
      if (++idx[j] < dims[j]) break;
      off -= dst_stride[j] * dims[j];
      idx[j] = 0;
    }
  }
}

}  // namespace tierzero
