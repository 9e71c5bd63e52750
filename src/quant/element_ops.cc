// host_element_ops(): dtype.h's conversions and quant.h's quantisers, run at once.
#include <cstdint>

#include "quant/element_ops.h"

namespace tierzero {

namespace {
class HostElementOps final : public ElementOps {
 public:
  void to_f32(DType from, const void* src, float* dst, std::size_t n) override { tierzero::to_f32(from, src, dst, n); }
  void from_f32(DType to, const float* src, void* dst, std::size_t n) override { tierzero::from_f32(to, src, dst, n); }
  void add_to_f32(DType t, const void* src, float* acc, std::size_t n) override {
    if (t == DType::f32) {
      const auto* f = static_cast<const float*>(src);
      for (std::size_t i = 0; i < n; ++i) acc[i] += f[i];
      return;
    }
    const auto* h = static_cast<const std::uint16_t*>(src);
    for (std::size_t i = 0; i < n; ++i) acc[i] += t == DType::bf16 ? bf16_to_f32(h[i]) : f16_to_f32(h[i]);
  }
  void divide(void* buf, std::size_t n, DType t, int divisor) override { divide_elements(buf, n, t, divisor); }
  void quantize(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed) override {
    tierzero::quantize(src, t, n, s, packed);
  }
  void dequantize(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t) override {
    tierzero::dequantize(packed, n, s, dst, t);
  }
  void dequantize_add(const void* packed, std::size_t n, const QuantSpec& s, float* acc) override {
    tierzero::dequantize_add(packed, n, s, acc);
  }
};
}  // namespace

ElementOps& host_element_ops() {
  static HostElementOps ops;
  return ops;
}

}  // namespace tierzero
