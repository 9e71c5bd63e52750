// The scalar reference: defines the semantics the vectorised kernels match.
#include "quant/quant_block.h"

#include "tierzero/error.h"

namespace tierzero::quant {

namespace {
template <class In>
std::size_t quantize_t(const In* src, std::size_t n, const QuantSpec& s, void* packed) {
  auto* data = static_cast<std::uint8_t*>(packed);
  std::memset(data, 0, quant_data_bytes(n, s));
  std::size_t bad = 0;
  for (std::size_t b = 0, begin = 0; begin < n; ++b, begin += s.block) {
    const std::size_t end = end_of(n, begin, s.block);
    Stats st;
    for (std::size_t i = begin; i < end; ++i) st.add(load(src, i));
    const Params p = params(st, s);
    bad += p.bad;
    quantize_range(src, begin, end, p, s, data);
    write_params(packed, n, b, p, s);
  }
  return bad;
}

template <class Out>
void dequantize_t(const void* packed, std::size_t n, const QuantSpec& s, Out* dst) {
  const auto* data = static_cast<const std::uint8_t*>(packed);
  for (std::size_t b = 0, begin = 0; begin < n; ++b, begin += s.block)
    dequantize_range(data, begin, end_of(n, begin, s.block), read_params(packed, n, b, s), s, dst);
}

std::size_t quantize_ref(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed) {
  switch (t) {
    case DType::f32: return quantize_t(static_cast<const float*>(src), n, s, packed);
    case DType::bf16: return quantize_t(static_cast<const BF16*>(src), n, s, packed);
    case DType::f16: return quantize_t(static_cast<const F16*>(src), n, s, packed);
    default: TZ_THROW(ConfigError, "cannot quantise " + std::string(dtype_name(t)) + " elements");
  }
}

void dequantize_ref(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t) {
  switch (t) {
    case DType::f32: return dequantize_t(packed, n, s, static_cast<float*>(dst));
    case DType::bf16: return dequantize_t(packed, n, s, static_cast<BF16*>(dst));
    case DType::f16: return dequantize_t(packed, n, s, static_cast<F16*>(dst));
    default: TZ_THROW(ConfigError, "cannot dequantise into " + std::string(dtype_name(t)) + " elements");
  }
}

void dequantize_add_ref(const void* packed, std::size_t n, const QuantSpec& s, float* acc) {
  const auto* data = static_cast<const std::uint8_t*>(packed);
  for (std::size_t b = 0, begin = 0; begin < n; ++b, begin += s.block)
    dequantize_add_range(data, begin, end_of(n, begin, s.block), read_params(packed, n, b, s), s, acc);
}
}  // namespace

const Kernels& reference_kernels() {
  static const Kernels k{quantize_ref, dequantize_ref, dequantize_add_ref};
  return k;
}

}  // namespace tierzero::quant
