// host_memory(): the CPU's conversions, quantisers and AdamW, run at once.
#include <cstring>
#include <new>

#include "tierzero/memory.h"

namespace tierzero {

namespace {
constexpr std::align_val_t kAlign{64};

class HostMemory final : public Memory {
 public:
  void* allocate(std::size_t bytes) override { return ::operator new(bytes, kAlign); }
  void release(void* p) noexcept override { ::operator delete(p, kAlign); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (dst != src && bytes) std::memmove(dst, src, bytes);
  }
  void upload(void* dst, const void* host_src, std::size_t bytes) override { copy(dst, host_src, bytes); }
  void download(void* host_dst, const void* src, std::size_t bytes) override { copy(host_dst, src, bytes); }
  void zero(void* dst, std::size_t bytes) override {
    if (bytes) std::memset(dst, 0, bytes);
  }
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
  void scale(float* buf, std::size_t n, float factor) override {
    for (std::size_t i = 0; i < n; ++i) buf[i] *= factor;
  }
  double sum_squares(const float* buf, std::size_t n) override {
    double sq = 0;
    for (std::size_t i = 0; i < n; ++i) sq += static_cast<double>(buf[i]) * buf[i];
    return sq;
  }
  void quantize(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed) override {
    tierzero::quantize(src, t, n, s, packed);
  }
  void dequantize(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t) override {
    tierzero::dequantize(packed, n, s, dst, t);
  }
  void dequantize_add(const void* packed, std::size_t n, const QuantSpec& s, float* acc) override {
    tierzero::dequantize_add(packed, n, s, acc);
  }
  void adamw(float* p, const float* g, float* m, float* v, std::size_t n, const AdamWConfig& c, std::int64_t t, float lr,
             bool decay) override {
    adamw_update(p, g, m, v, n, c, t, lr, decay);
  }
  void fence() override {}
  MemMark mark() override { return {}; }
  void wait_for(const MemMark&) override {}
};
}  // namespace

Memory& host_memory() {
  static HostMemory memory;
  return memory;
}

}  // namespace tierzero
