// AVX2 (+F16C) vector traits for the quantisation kernels.
// Compiled for the vector ISA through a target pragma (GCC's, or clang's attribute); -ffp-contract=off.
#include <immintrin.h>

#include "quant/quant_block.h"

// Only what follows is compiled for the vector ISA: the shared headers above
// keep the baseline target, so their out-of-line copies run on any x86-64.
#if defined(__clang__)  // clang ignores GCC's target pragma
#pragma clang attribute push(__attribute__((target("avx2,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,f16c")
#endif
#include "quant/quant_simd.h"

namespace tierzero::quant {

namespace {
struct Avx2 {
  using F = __m256;
  using I = __m256i;
  static constexpr std::size_t kLanes = 8;

  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static F load(const BF16* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static F load(const F16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static void store(BF16* p, F v) {  // round to nearest even; NaN stays a quiet NaN
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
    // NaN: |u| > 0x7f800000 (as signed ints, both sides are non-negative).
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    const __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    const __m256i out = _mm256_blendv_epi8(r, q, nan);
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(out), _mm256_extracti128_si256(out, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
  }
  static void store(F16* p, F v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static float hmax(F x) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  static float hmin(F x) {
    __m128 m = _mm_min_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_min_ps(m, _mm_movehl_ps(m, m));
    m = _mm_min_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  static I izero() { return _mm256_setzero_si256(); }
  static I as_bits(F x) { return _mm256_castps_si256(x); }
  static I load_bits(const float* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  template <class T>
  static I load_bits16(const T* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }  // 16 lanes
  static I and_mask(I x, int m) { return _mm256_and_si256(x, _mm256_set1_epi32(m)); }
  static I max_u32(I a, I b) { return _mm256_max_epu32(a, b); }
  static I max_u16(I a, I b) { return _mm256_max_epu16(a, b); }
  static I set1_16(int v) { return _mm256_set1_epi16(static_cast<short>(v)); }
  static I min_i16(I a, I b) { return _mm256_min_epi16(a, b); }
  static I xor16(I x, int m) { return _mm256_xor_si256(x, set1_16(m)); }
  // The least unsigned 16-bit lane (SSE4.1's minpos over the folded halves).
  static std::uint16_t hmin_u16(I x) {
    const __m128i b = _mm_min_epu16(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
    return static_cast<std::uint16_t>(_mm_cvtsi128_si32(_mm_minpos_epu16(b)));
  }
  static I max_i16(I a, I b) { return _mm256_max_epi16(a, b); }
  static std::uint32_t hmax_u32(I x) {
    __m128i b = _mm_max_epu32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
    b = _mm_max_epu32(b, _mm_srli_si128(b, 8));
    b = _mm_max_epu32(b, _mm_srli_si128(b, 4));
    return static_cast<std::uint32_t>(_mm_cvtsi128_si32(b));
  }
  static I round(F x) { return _mm256_cvtps_epi32(x); }  // MXCSR default: nearest even
  static F to_float(I q) { return _mm256_cvtepi32_ps(q); }
  // The low byte of each 32-bit lane, in order, in the low 8 bytes.
  static __m128i low_bytes(I q) {
    const __m128i pick = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i a = _mm_shuffle_epi8(_mm256_castsi256_si128(q), pick);
    const __m128i b = _mm_shuffle_epi8(_mm256_extracti128_si256(q, 1), pick);
    return _mm_unpacklo_epi32(a, b);
  }
  static void store_q8(std::uint8_t* p, I q) { _mm_storel_epi64(reinterpret_cast<__m128i*>(p), low_bytes(q)); }
  // Four vectors' values as 32 bytes in order: in-lane saturating packs (the
  // values are in range, so nothing saturates) leave 128-bit lane l holding
  // a_l, b_l, c_l, d_l (4 bytes each); one dword permutation restores the order.
  template <bool Asym>
  static __m256i pack_bytes(I a, I b, I c, I d) {
    const __m256i w0 = Asym ? _mm256_packus_epi32(a, b) : _mm256_packs_epi32(a, b);
    const __m256i w1 = Asym ? _mm256_packus_epi32(c, d) : _mm256_packs_epi32(c, d);
    const __m256i bytes = Asym ? _mm256_packus_epi16(w0, w1) : _mm256_packs_epi16(w0, w1);
    return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }
  template <bool Asym>
  static void store_q8x4(std::uint8_t* p, I a, I b, I c, I d) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), pack_bytes<Asym>(a, b, c, d));
  }
  template <bool Asym>
  static void store_q4x4(std::uint8_t* p, I a, I b, I c, I d) {
    const __m256i w = pack_bytes<Asym>(a, b, c, d);  // as u16 lanes: even | odd << 8
    const __m256i nib = _mm256_or_si256(_mm256_and_si256(w, _mm256_set1_epi16(0x000f)),
                                        _mm256_and_si256(_mm256_srli_epi16(w, 4), _mm256_set1_epi16(0x00f0)));
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(nib, nib), 0x08);  // qwords 0 and 2: 16 bytes
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
  }
  static void store_q4(std::uint8_t* p, I q) {
    const __m128i w = low_bytes(q);  // as u16 lanes: even | odd << 8
    const __m128i nib = _mm_or_si128(_mm_and_si128(w, _mm_set1_epi16(0x000f)),
                                     _mm_and_si128(_mm_srli_epi16(w, 4), _mm_set1_epi16(0x00f0)));
    const int four = _mm_cvtsi128_si32(_mm_packus_epi16(nib, nib));
    std::memcpy(p, &four, 4);
  }
  static I load_q8(const std::uint8_t* p, bool asym) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return asym ? _mm256_cvtepu8_epi32(b) : _mm256_cvtepi8_epi32(b);
  }
  // 8 nibbles: each byte widened twice into 32-bit lanes, then the lane's
  // nibble shifted to the top and back down (arithmetic: sign-extended when
  // symmetric) or shifted down and masked.
  static I load_q4(const std::uint8_t* p, bool asym) {
    int four;
    std::memcpy(&four, p, 4);
    const __m128i x = _mm_cvtsi32_si128(four);
    const __m256i b = _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(x, x));  // b0 b0 b1 b1 ...
    if (asym) return _mm256_and_si256(_mm256_srlv_epi32(b, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4)), _mm256_set1_epi32(0x0f));
    return _mm256_srai_epi32(_mm256_sllv_epi32(b, _mm256_setr_epi32(28, 24, 28, 24, 28, 24, 28, 24)), 28);
  }
};
}  // namespace

const Kernels* avx2_kernels() { return &SimdKernels<Avx2>::kernels(); }

}  // namespace tierzero::quant

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
