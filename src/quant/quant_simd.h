// The vectorised quantisation kernels, written once over a vector traits
// type V (quant_avx2.cc, quant_avx512.cc). Full vectors of V::kLanes
// elements go through V; block tails and bad blocks go through the scalar
// reference functions of quant_block.h, so every element is computed with
// the same fp32 operations as the reference and the output is identical.
#pragma once
#include <type_traits>

#include "quant/quant_block.h"

namespace tierzero::quant {
namespace {

template <class V>
struct SimdKernels {
  static constexpr std::size_t L = V::kLanes;

  // int4 vectors must start on a byte boundary.
  static bool vector_ok(std::size_t begin, const QuantSpec& s) { return s.bits == 8 || begin % 2 == 0; }

  // Symmetric blocks need only absmax and finiteness, read from the bit
  // patterns: for |x| the IEEE encodings order like unsigned integers and
  // Inf/NaN are the largest, so one integer max gives both. bf16/fp16 are
  // scanned as raw 16-bit lanes, twice as many per vector.
  template <class In>
  static std::size_t scan_absmax(const In* p, std::size_t n, Stats& st) {
    typename V::I m = V::izero();
    std::size_t k = 0;
    if constexpr (std::is_same_v<In, float>) {
      for (; k + L <= n; k += L) m = V::max_u32(m, V::and_mask(V::load_bits(p + k), 0x7fffffff));
      const std::uint32_t bits = V::hmax_u32(m);
      st.bad = bits >= 0x7f800000u;
      st.absmax = bits_as<float>(bits);
    } else {
      for (; k + 2 * L <= n; k += 2 * L) m = V::max_u16(m, V::and_mask(V::load_bits16(p + k), 0x7fff7fff));
      const std::uint16_t bits = V::hmax_u16(m);
      st.bad = bits >= (std::is_same_v<In, BF16> ? 0x7f80u : 0x7c00u);
      const In top{bits};
      st.absmax = load(&top, 0);
    }
    return k;
  }

  template <class In>
  static std::size_t scan_minmax(const In* p, std::size_t n, Stats& st) {
    typename V::F vmin = V::set1(std::numeric_limits<float>::infinity()),
                  vmax = V::set1(-std::numeric_limits<float>::infinity());
    typename V::I abs_bits = V::izero();
    std::size_t k = 0;
    for (; k + L <= n; k += L) {
      const typename V::F x = V::load(p + k);
      vmin = V::min(vmin, x);
      vmax = V::max(vmax, x);
      abs_bits = V::max_u32(abs_bits, V::and_mask(V::as_bits(x), 0x7fffffff));
    }
    st.min = V::hmin(vmin);
    st.max = V::hmax(vmax);
    st.bad = V::hmax_u32(abs_bits) >= 0x7f800000u;
    return k;
  }

  template <class In>
  static Stats block_stats(const In* src, std::size_t begin, std::size_t end, const QuantSpec& s) {
    Stats st;
    std::size_t i = begin + (s.asymmetric ? scan_minmax(src + begin, end - begin, st) : scan_absmax(src + begin, end - begin, st));
    for (; i < end; ++i) st.add(load(src, i));
    return st;
  }

  // No clamp is needed (the reference's never acts): |x| <= absmax gives
  // |x * RN(qmax / absmax)| <= qmax (1 + 2^-24)^2 < qmax + 1/2, and
  // 0 <= RN(x - min) <= RN(max - min) bounds the asymmetric case alike.
  static typename V::I quantize_vec(typename V::F x, const Params& p, const QuantSpec& s) {
    if (s.asymmetric) return V::round(V::mul(V::sub(x, V::set1(p.offset)), V::set1(p.inv)));
    return V::round(V::mul(x, V::set1(p.inv)));
  }

  static typename V::F dequantize_vec(const std::uint8_t* data, std::size_t i, const Params& p, const QuantSpec& s) {
    const typename V::I q = s.bits == 8 ? V::load_q8(data + i, s.asymmetric) : V::load_q4(data + i / 2, s.asymmetric);
    const typename V::F v = V::mul(V::to_float(q), V::set1(p.scale));
    return s.asymmetric ? V::add(v, V::set1(p.offset)) : v;
  }

  template <class In>
  static std::size_t quantize_t(const In* src, std::size_t n, const QuantSpec& s, void* packed) {
    auto* data = static_cast<std::uint8_t*>(packed);
    std::memset(data, 0, quant_data_bytes(n, s));
    std::size_t bad = 0;
    for (std::size_t b = 0, begin = 0; begin < n; ++b, begin += s.block) {
      const std::size_t end = end_of(n, begin, s.block);
      const Params p = params(block_stats(src, begin, end, s), s);
      bad += p.bad;
      std::size_t i = begin;
      if (!p.bad && vector_ok(begin, s)) {
        for (; i + L <= end; i += L) {
          const typename V::I q = quantize_vec(V::load(src + i), p, s);
          if (s.bits == 8) V::store_q8(data + i, q);
          else V::store_q4(data + i / 2, q);
        }
      }
      quantize_range(src, i, end, p, s, data);
      write_params(packed, n, b, p, s);
    }
    return bad;
  }

  // Decodes every block: full vectors go to put(i, values), the rest of the
  // block to tail(i, end, params) (the reference's scalar functions).
  template <class Put, class Tail>
  static void decode_blocks(const void* packed, std::size_t n, const QuantSpec& s, Put put, Tail tail) {
    const auto* data = static_cast<const std::uint8_t*>(packed);
    for (std::size_t b = 0, begin = 0; begin < n; ++b, begin += s.block) {
      const std::size_t end = end_of(n, begin, s.block);
      const Params p = read_params(packed, n, b, s);
      std::size_t i = begin;
      if (vector_ok(begin, s))
        for (; i + L <= end; i += L) put(i, dequantize_vec(data, i, p, s));
      tail(i, end, p);
    }
  }

  template <class Out>
  static void dequantize_t(const void* packed, std::size_t n, const QuantSpec& s, Out* dst) {
    const auto* data = static_cast<const std::uint8_t*>(packed);
    decode_blocks(
        packed, n, s, [&](std::size_t i, typename V::F v) { V::store(dst + i, v); },
        [&](std::size_t i, std::size_t end, const Params& p) { dequantize_range(data, i, end, p, s, dst); });
  }

  static std::size_t quantize(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed) {
    switch (t) {
      case DType::f32: return quantize_t(static_cast<const float*>(src), n, s, packed);
      case DType::bf16: return quantize_t(static_cast<const BF16*>(src), n, s, packed);
      case DType::f16: return quantize_t(static_cast<const F16*>(src), n, s, packed);
      default: return reference_kernels().quantize(src, t, n, s, packed);  // throws
    }
  }

  static void dequantize(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t) {
    switch (t) {
      case DType::f32: return dequantize_t(packed, n, s, static_cast<float*>(dst));
      case DType::bf16: return dequantize_t(packed, n, s, static_cast<BF16*>(dst));
      case DType::f16: return dequantize_t(packed, n, s, static_cast<F16*>(dst));
      default: return reference_kernels().dequantize(packed, n, s, dst, t);  // throws
    }
  }

  static void dequantize_add(const void* packed, std::size_t n, const QuantSpec& s, float* acc) {
    const auto* data = static_cast<const std::uint8_t*>(packed);
    decode_blocks(
        packed, n, s, [&](std::size_t i, typename V::F v) { V::store(acc + i, V::add(V::load(acc + i), v)); },
        [&](std::size_t i, std::size_t end, const Params& p) { dequantize_add_range(data, i, end, p, s, acc); });
  }

  static const Kernels& kernels() {
    static const Kernels k{quantize, dequantize, dequantize_add};
    return k;
  }
};

}  // namespace
}  // namespace tierzero::quant
