// The AVX-512 (F, BW, VL) vector traits of the quantisation kernels, for
// quant_avx512.cc and quant_avx512bf16.cc: include it inside the translation
// unit's vector-ISA target region (after quant_block.h, outside it).
// -ffp-contract=off.
#pragma once
#include <immintrin.h>

#include "quant/quant_simd.h"

namespace tierzero::quant {

namespace {
struct Avx512 {
  using F = __m512;
  using I = __m512i;
  static constexpr std::size_t kLanes = 16;

  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static F load(const BF16* p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static F load(const F16* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  // 2L bf16 values as their fp32 even and odd elements: one load, a shift
  // and a mask (lane j holds elements 2j and 2j + 1) — no shuffle, which
  // the one-vector load spends on widening.
  static void load_pairs(const BF16* p, F& even, F& odd) {
    const __m512i x = _mm512_loadu_si512(p);
    even = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    odd = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  // v's bf16 patterns in the low halves of the lanes: round to nearest
  // even; NaN stays a quiet NaN.
  static __m512i bf16_bits(F v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
  }
  static void store(BF16* p, F v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bf16_bits(v))); }
  // 2L bf16 values given as even and odd elements: lane j's two patterns
  // are elements 2j and 2j + 1 in memory order, stored with no shuffle.
  static void store_pairs(BF16* p, F even, F odd) {
    _mm512_storeu_si512(p, _mm512_or_si512(bf16_bits(even), _mm512_slli_epi32(bf16_bits(odd), 16)));
  }
  static void store(F16* p, F v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static float hmax(F x) { return _mm512_reduce_max_ps(x); }
  static float hmin(F x) { return _mm512_reduce_min_ps(x); }
  static I izero() { return _mm512_setzero_si512(); }
  static I as_bits(F x) { return _mm512_castps_si512(x); }
  static I load_bits(const float* p) { return _mm512_loadu_si512(p); }
  template <class T>
  static I load_bits16(const T* p) { return _mm512_loadu_si512(p); }  // 32 bf16/fp16 lanes
  static I and_mask(I x, int m) { return _mm512_and_si512(x, _mm512_set1_epi32(m)); }
  static I max_u32(I a, I b) { return _mm512_max_epu32(a, b); }
  static I max_u16(I a, I b) { return _mm512_max_epu16(a, b); }
  static I set1_16(int v) { return _mm512_set1_epi16(static_cast<short>(v)); }
  static I min_i16(I a, I b) { return _mm512_min_epi16(a, b); }
  static I xor16(I x, int m) { return _mm512_xor_si512(x, set1_16(m)); }
  // The least unsigned 16-bit lane (SSE4.1's minpos over the folded halves).
  static std::uint16_t hmin_u16(I x) {
    const __m256i a = _mm256_min_epu16(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64(x, 1));
    __m128i b = _mm_min_epu16(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    return static_cast<std::uint16_t>(_mm_cvtsi128_si32(_mm_minpos_epu16(b)));
  }
  static I max_i16(I a, I b) { return _mm512_max_epi16(a, b); }
  static std::uint32_t hmax_u32(I x) { return _mm512_reduce_max_epu32(x); }
  static I round(F x) { return _mm512_cvtps_epi32(x); }  // MXCSR default: nearest even
  static F to_float(I q) { return _mm512_cvtepi32_ps(q); }
  static void store_q8(std::uint8_t* p, I q) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(q)); }
  // Four vectors' values as 64 bytes in order: in-lane saturating packs (the
  // values are in range, so nothing saturates) leave 128-bit lane l holding
  // a_l, b_l, c_l, d_l (4 bytes each); one dword permutation restores the order.
  template <bool Asym>
  static __m512i pack_bytes(I a, I b, I c, I d) {
    const __m512i w0 = Asym ? _mm512_packus_epi32(a, b) : _mm512_packs_epi32(a, b);
    const __m512i w1 = Asym ? _mm512_packus_epi32(c, d) : _mm512_packs_epi32(c, d);
    const __m512i bytes = Asym ? _mm512_packus_epi16(w0, w1) : _mm512_packs_epi16(w0, w1);
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), bytes);
  }
  template <bool Asym>
  static void store_q8x4(std::uint8_t* p, I a, I b, I c, I d) {
    _mm512_storeu_si512(p, pack_bytes<Asym>(a, b, c, d));
  }
  template <bool Asym>
  static void store_q4x4(std::uint8_t* p, I a, I b, I c, I d) {
    const __m512i w = pack_bytes<Asym>(a, b, c, d);  // as u16 lanes: even | odd << 8
    const __m512i nib = _mm512_or_si512(_mm512_and_si512(w, _mm512_set1_epi16(0x000f)),
                                        _mm512_and_si512(_mm512_srli_epi16(w, 4), _mm512_set1_epi16(0x00f0)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi16_epi8(nib));
  }
  // 4L values given as the even and odd elements of two 2L halves (load_pairs),
  // as bytes in order: in-lane packs leave 128-bit lane l holding 4 bytes
  // each of e0, o0, e1, o1; a byte shuffle interleaves each half's evens
  // and odds, one qword permutation puts the halves in order.
  template <bool Asym>
  static void store_q8_pairs(std::uint8_t* p, I e0, I o0, I e1, I o1) {
    const __m512i w0 = Asym ? _mm512_packus_epi32(e0, o0) : _mm512_packs_epi32(e0, o0);
    const __m512i w1 = Asym ? _mm512_packus_epi32(e1, o1) : _mm512_packs_epi32(e1, o1);
    const __m512i bytes = Asym ? _mm512_packus_epi16(w0, w1) : _mm512_packs_epi16(w0, w1);
    const __m512i pairs =
        _mm512_shuffle_epi8(bytes, _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15)));
    _mm512_storeu_si512(p, _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), pairs));
  }
  // The same for int4: lane j's byte is its even value's nibble under its
  // odd value's (-112..127 or 0..255, so the packs never saturate), as in
  // store_q4x4.
  template <bool Asym>
  static void store_q4_pairs(std::uint8_t* p, I e0, I o0, I e1, I o1) {
    const __m512i low = _mm512_set1_epi32(0x0f);  // ternary 0xF8: a | (b & c)
    const __m512i b0 = _mm512_ternarylogic_epi32(_mm512_slli_epi32(o0, 4), e0, low, 0xF8);
    const __m512i b1 = _mm512_ternarylogic_epi32(_mm512_slli_epi32(o1, 4), e1, low, 0xF8);
    const __m512i w = Asym ? _mm512_packus_epi32(b0, b1) : _mm512_packs_epi32(b0, b1);  // lane l: b0's 4, b1's 4
    const __m512i ordered = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), w);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi16_epi8(ordered));
  }
  // 2L int8 or int4 values as their even and odd elements: one widening
  // load, then shifts (the pair of a 16-bit word or of a byte's nibbles).
  template <bool Asym>
  static void load_q8_pairs(const std::uint8_t* p, I& even, I& odd) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if constexpr (Asym) {
      const __m512i x = _mm512_cvtepu16_epi32(w);
      even = _mm512_and_si512(x, _mm512_set1_epi32(0xff));
      odd = _mm512_srli_epi32(x, 8);
    } else {
      const __m512i x = _mm512_cvtepi16_epi32(w);
      even = _mm512_srai_epi32(_mm512_slli_epi32(x, 24), 24);
      odd = _mm512_srai_epi32(x, 8);
    }
  }
  template <bool Asym>
  static void load_q4_pairs(const std::uint8_t* p, I& even, I& odd) {
    const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    if constexpr (Asym) {
      even = _mm512_and_si512(x, _mm512_set1_epi32(0x0f));
      odd = _mm512_srli_epi32(x, 4);
    } else {
      even = _mm512_srai_epi32(_mm512_slli_epi32(x, 28), 28);
      odd = _mm512_srai_epi32(_mm512_slli_epi32(x, 24), 28);
    }
  }
  static void store_q4(std::uint8_t* p, I q) {
    const __m128i w = _mm512_cvtepi32_epi8(q);  // 16 bytes; as u16 lanes: even | odd << 8
    const __m128i nib = _mm_or_si128(_mm_and_si128(w, _mm_set1_epi16(0x000f)),
                                     _mm_and_si128(_mm_srli_epi16(w, 4), _mm_set1_epi16(0x00f0)));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(nib, nib));
  }
  static I load_q8(const std::uint8_t* p, bool asym) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return asym ? _mm512_cvtepu8_epi32(b) : _mm512_cvtepi8_epi32(b);
  }
  // 16 nibbles: each byte widened twice into 32-bit lanes, then the lane's
  // nibble shifted to the top and back down (arithmetic: sign-extended when
  // symmetric) or shifted down and masked.
  static I load_q4(const std::uint8_t* p, bool asym) {
    const __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    const __m512i b = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(x, x));  // b0 b0 b1 b1 ...
    if (asym) return _mm512_and_si512(_mm512_srlv_epi32(b, _mm512_set4_epi32(4, 0, 4, 0)), _mm512_set1_epi32(0x0f));
    return _mm512_srai_epi32(_mm512_sllv_epi32(b, _mm512_set4_epi32(24, 28, 24, 28)), 28);
  }
};
}  // namespace
}  // namespace tierzero::quant
