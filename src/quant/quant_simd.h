// The vectorised quantisation kernels, written once over a vector traits
// type V (quant_avx2.cc, quant_avx512_traits.h). Full vectors of V::kLanes
// elements go through V; block tails and bad blocks go through the scalar
// reference functions of quant_block.h, so every element is computed with
// the same fp32 operations as the reference and the output is identical.
#pragma once
#include <type_traits>

#include "quant/quant_block.h"

namespace tierzero::quant {
namespace {

// Per-block helpers are inlined into the block loops: as calls they cost
// about as much as a 256-element block's own work.
#define TZ_BLOCK_INLINE [[gnu::always_inline]] inline

// One callable of several lambdas' overloads.
template <class... Fs>
struct Overload : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overload(Fs...) -> Overload<Fs...>;

template <class V>
struct SimdKernels {
  static constexpr std::size_t L = V::kLanes;
  // Whether V decodes to bf16 as even/odd pairs (V::store_pairs, V::load_q8_pairs, V::load_q4_pairs).
  template <class Out>
  static constexpr bool kPairs = std::is_same_v<Out, BF16> && requires(BF16* p, typename V::F f) { V::store_pairs(p, f, f); };
  // Whether V quantises bf16 as even/odd pairs (V::load_pairs, V::store_q8_pairs, V::store_q4_pairs).
  template <class In>
  static constexpr bool kLoadPairs = std::is_same_v<In, BF16> && requires(const BF16* p, typename V::F f) { V::load_pairs(p, f, f); };

  // Horizontal 16-bit reductions, all through V::hmin_u16: flipping every
  // bit turns max into min; flipping the sign bit orders signed lanes as unsigned.
  static std::uint16_t hmax_u16(typename V::I x) { return static_cast<std::uint16_t>(0xffffu ^ V::hmin_u16(V::xor16(x, 0xffff))); }
  static std::uint16_t hmin_i16(typename V::I x) { return static_cast<std::uint16_t>(0x8000u ^ V::hmin_u16(V::xor16(x, 0x8000))); }
  static std::uint16_t hmax_i16(typename V::I x) { return static_cast<std::uint16_t>(0x8000u ^ hmax_u16(V::xor16(x, 0x8000))); }

  // Symmetric blocks need only absmax and finiteness, read from the bit
  // patterns: for |x| the IEEE encodings order like unsigned integers and
  // Inf/NaN are the largest, so one integer max gives both. bf16/fp16 are
  // scanned as raw 16-bit lanes, twice as many per vector.
  template <class In>
  TZ_BLOCK_INLINE static std::size_t scan_absmax(const In* p, std::size_t n, Stats& st) {
    typename V::I m = V::izero();
    std::size_t k = 0;
    if constexpr (std::is_same_v<In, float>) {
      for (; k + L <= n; k += L) m = V::max_u32(m, V::and_mask(V::load_bits(p + k), 0x7fffffff));
      const std::uint32_t bits = V::hmax_u32(m);
      st.bad = bits >= 0x7f800000u;
      st.absmax = bits_as<float>(bits);
    } else {
      for (; k + 2 * L <= n; k += 2 * L) m = V::max_u16(m, V::and_mask(V::load_bits16(p + k), 0x7fff7fff));
      const std::uint16_t bits = hmax_u16(m);
      st.bad = bits >= (std::is_same_v<In, BF16> ? 0x7f80u : 0x7c00u);
      const In top{bits};
      st.absmax = load(&top, 0);
    }
    return k;
  }

  // bf16/fp16 (sign and magnitude in 16 bits), on the raw patterns, twice
  // as many lanes a vector and no conversion: as signed integers the
  // non-negative values order like the numbers and the negative ones in
  // reverse; as unsigned, every negative pattern is above every other.
  // So max = the signed max if it is non-negative, else the signed min
  // (the negative of least magnitude); min = the unsigned max if it is a
  // negative pattern, else (no negative pattern, where signed and unsigned
  // order alike) the signed min. The largest magnitude, for finiteness, is
  // the larger of those two extremes'. -0 may come out where the reference
  // has +0; params() makes the offset +0.
  template <class In>
  TZ_BLOCK_INLINE static std::size_t scan_minmax16(const In* p, std::size_t n, Stats& st) {
    typename V::I smax = V::set1_16(-0x8000), smin = V::set1_16(0x7fff), umax = V::izero();
    std::size_t k = 0;
    for (; k + 2 * L <= n; k += 2 * L) {
      const typename V::I x = V::load_bits16(p + k);
      smax = V::max_i16(smax, x), smin = V::min_i16(smin, x), umax = V::max_u16(umax, x);
    }
    if (k == 0) return 0;
    const std::uint16_t hi_s = hmax_i16(smax), hi_u = hmax_u16(umax);
    const std::uint16_t max_bits = hi_s < 0x8000u ? hi_s : hmin_i16(smin);
    const std::uint16_t min_bits = hi_u >= 0x8000u ? hi_u : hmin_i16(smin);
    const std::uint16_t mag = std::max<std::uint16_t>(hi_s < 0x8000u ? hi_s : 0, hi_u >= 0x8000u ? hi_u & 0x7fffu : 0);
    const In min{min_bits}, max{max_bits};
    st.min = load(&min, 0);
    st.max = load(&max, 0);
    st.bad = mag >= (std::is_same_v<In, BF16> ? 0x7f80u : 0x7c00u);
    return k;
  }

  template <class In>
  TZ_BLOCK_INLINE static std::size_t scan_minmax(const In* p, std::size_t n, Stats& st) {
    if constexpr (!std::is_same_v<In, float>) return scan_minmax16(p, n, st);
    else return scan_minmax32(p, n, st);
  }

  template <class In>  // float
  TZ_BLOCK_INLINE static std::size_t scan_minmax32(const In* p, std::size_t n, Stats& st) {
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

  template <bool Asym, class In>
  TZ_BLOCK_INLINE static Stats block_stats(const In* src, std::size_t begin, std::size_t end) {
    Stats st;
    std::size_t i = begin + (Asym ? scan_minmax(src + begin, end - begin, st) : scan_absmax(src + begin, end - begin, st));
    for (; i < end; ++i) st.add(load(src, i));
    return st;
  }

  // Runs f.template operator()<Bits, Asym>() for s's bits and mode: the
  // inner loops then test neither (a spec read through a reference would be
  // reloaded after every byte store, which may alias it).
  template <class F>
  static auto with_mode(const QuantSpec& s, F&& f) {
    if (s.bits == 8) return s.asymmetric ? f.template operator()<8, true>() : f.template operator()<8, false>();
    return s.asymmetric ? f.template operator()<4, true>() : f.template operator()<4, false>();
  }

  // Block b's values: four vectors at a time packed into whole bytes (one
  // store; bf16 loaded as even/odd pairs where V can), then single vectors,
  // then the reference's scalar tail.
  // No clamp is needed (the reference's never acts): |x| <= absmax gives
  // |x * RN(qmax / absmax)| <= qmax (1 + 2^-24)^2 < qmax + 1/2, and
  // 0 <= RN(x - min) <= RN(max - min) bounds the asymmetric case alike.
  template <int Bits, bool Asym, class In>
  static void quantize_block(const In* src, std::size_t begin, std::size_t end, const Params& p, const QuantSpec& s,
                             std::uint8_t* data) {
    std::size_t i = begin;
    if (!p.bad && (Bits == 8 || begin % 2 == 0)) {  // int4 vectors start on a byte boundary
      const typename V::F inv = V::set1(p.inv), offset = V::set1(p.offset);
      auto rq = [&](typename V::F x) { return V::round(V::mul(Asym ? V::sub(x, offset) : x, inv)); };
      auto q = [&](std::size_t k) { return rq(V::load(src + k)); };
      if constexpr (kLoadPairs<In>) {
        for (; i + 4 * L <= end; i += 4 * L) {
          typename V::F e0, o0, e1, o1;
          V::load_pairs(src + i, e0, o0);
          V::load_pairs(src + i + 2 * L, e1, o1);
          if constexpr (Bits == 8) V::template store_q8_pairs<Asym>(data + i, rq(e0), rq(o0), rq(e1), rq(o1));
          else V::template store_q4_pairs<Asym>(data + i / 2, rq(e0), rq(o0), rq(e1), rq(o1));
        }
      }
      for (; i + 4 * L <= end; i += 4 * L) {
        if constexpr (Bits == 8) V::template store_q8x4<Asym>(data + i, q(i), q(i + L), q(i + 2 * L), q(i + 3 * L));
        else V::template store_q4x4<Asym>(data + i / 2, q(i), q(i + L), q(i + 2 * L), q(i + 3 * L));
      }
      for (; i + L <= end; i += L) {
        if constexpr (Bits == 8) V::store_q8(data + i, q(i));
        else V::store_q4(data + i / 2, q(i));
      }
    }
    if (Bits == 4 && i < end) std::memset(data + (i + 1) / 2, 0, (end + 1) / 2 - (i + 1) / 2);
    if (i < end) quantize_range(src, i, end, p, s, data);
  }

  // Every data byte is written once: vectors write whole bytes; only the
  // padding and the bytes the scalar tails fill nibble by nibble (int4) are
  // zeroed first, as the reference's zeroed buffer has them.
  // Software-pipelined: the next block's statistics and parameters (a
  // horizontal reduction and two divisions, a long dependency chain) are
  // computed before this block's values, so the core overlaps the two.
  template <int Bits, bool Asym, class In>
  static std::size_t quantize_mode(const In* src, std::size_t n, const QuantSpec& s, void* packed) {
    auto* data = static_cast<std::uint8_t*>(packed);
    const std::size_t raw = Bits == 8 ? n : (n + 1) / 2, block = s.block;
    std::memset(data + raw, 0, quant_data_bytes(n, s) - raw);
    std::size_t bad = 0;
    Params p = params(block_stats<Asym>(src, 0, end_of(n, 0, block)), s);
    for (std::size_t b = 0, begin = 0; begin < n; ++b, begin += block) {
      const std::size_t end = end_of(n, begin, block);
      const Params next = end < n ? params(block_stats<Asym>(src, end, end_of(n, end, block)), s) : Params{};
      bad += p.bad;
      quantize_block<Bits, Asym>(src, begin, end, p, s, data);
      write_params(packed, n, b, p, s);
      p = next;
    }
    return bad;
  }

  template <class In>
  static std::size_t quantize_t(const In* src, std::size_t n, const QuantSpec& s, void* packed) {
    return with_mode(s, [&]<int Bits, bool Asym>() { return quantize_mode<Bits, Asym>(src, n, s, packed); });
  }

  // Decodes every block: full vectors go to put(i, values) (pairs of them
  // to put(i, even, odd) where put takes them), the rest of the block to
  // tail(i, end, params) (the reference's scalar functions).
  template <int Bits, bool Asym, class Put, class Tail>
  static void decode_blocks(const void* packed, std::size_t n, const QuantSpec& s, Put put, Tail tail) {
    const auto* data = static_cast<const std::uint8_t*>(packed);
    const std::size_t block = s.block;
    for (std::size_t b = 0, begin = 0; begin < n; ++b, begin += block) {
      const std::size_t end = end_of(n, begin, block);
      const Params p = read_params(packed, n, b, s);
      std::size_t i = begin;
      if (Bits == 8 || begin % 2 == 0) {
        const typename V::F scale = V::set1(p.scale), offset = V::set1(p.offset);
        auto value = [&](typename V::I q) {
          const typename V::F v = V::mul(V::to_float(q), scale);
          return Asym ? V::add(v, offset) : v;
        };
        if constexpr (requires(typename V::F v) { put(i, v, v); }) {  // even/odd pairs
          for (; i + 2 * L <= end; i += 2 * L) {
            typename V::I even, odd;
            if constexpr (Bits == 8) V::template load_q8_pairs<Asym>(data + i, even, odd);
            else V::template load_q4_pairs<Asym>(data + i / 2, even, odd);
            put(i, value(even), value(odd));
          }
        }
        for (; i + L <= end; i += L) put(i, value(Bits == 8 ? V::load_q8(data + i, Asym) : V::load_q4(data + i / 2, Asym)));
      }
      if (i < end) tail(i, end, p);
    }
  }

  template <class Out>
  static void dequantize_t(const void* packed, std::size_t n, const QuantSpec& s, Out* dst) {
    const auto* data = static_cast<const std::uint8_t*>(packed);
    auto one = [&](std::size_t i, typename V::F v) { V::store(dst + i, v); };
    auto tail = [&](std::size_t i, std::size_t end, const Params& p) { dequantize_range(data, i, end, p, s, dst); };
    with_mode(s, [&]<int Bits, bool Asym>() {
      if constexpr (kPairs<Out>) {
        auto pair = [&](std::size_t i, typename V::F even, typename V::F odd) { V::store_pairs(dst + i, even, odd); };
        decode_blocks<Bits, Asym>(packed, n, s, Overload{one, pair}, tail);
      } else {
        decode_blocks<Bits, Asym>(packed, n, s, one, tail);
      }
    });
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
    with_mode(s, [&]<int Bits, bool Asym>() {
      decode_blocks<Bits, Asym>(
          packed, n, s, [&](std::size_t i, typename V::F v) { V::store(acc + i, V::add(V::load(acc + i), v)); },
          [&](std::size_t i, std::size_t end, const Params& p) { dequantize_add_range(data, i, end, p, s, acc); });
    });
  }

  static const Kernels& kernels() {
    static const Kernels k{quantize, dequantize, dequantize_add};
    return k;
  }
};

#undef TZ_BLOCK_INLINE

}  // namespace
}  // namespace tierzero::quant
