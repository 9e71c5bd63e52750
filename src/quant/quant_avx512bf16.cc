// The AVX-512 quantisation kernels with AVX512-BF16's fp32 -> bf16
// conversion for bf16 output (CPUs with avx512_bf16: AMD Zen 4 and later,
// Intel Cooper Lake, Sapphire Rapids and later). Everything else is
// quant_avx512.cc's. Compiled for the vector ISA through a target pragma
// (GCC's, or clang's attribute); -ffp-contract=off.
#include <immintrin.h>

#include "quant/quant_block.h"

#if defined(__clang__)  // clang ignores GCC's target pragma
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,f16c")
#endif
#include "quant/quant_avx512_traits.h"

namespace tierzero::quant {

namespace {
struct Avx512Bf16 : Avx512 {
  using Avx512::store;
  // VCVTNEPS2BF16 rounds to nearest even and quiets NaN as f32_to_bf16
  // does, but flushes fp32 denormals to zero: a vector holding one (values
  // below 2^-126, rare) takes the integer path instead.
  static void store(BF16* p, F v) {
    if (_mm512_fpclass_ps_mask(v, 0x20)) return Avx512::store(p, v);  // 0x20: denormal
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), (__m256i)_mm512_cvtneps_pbh(v));
  }
  static void store_pairs(BF16* p, F even, F odd) {
    if (_mm512_fpclass_ps_mask(even, 0x20) | _mm512_fpclass_ps_mask(odd, 0x20)) return Avx512::store_pairs(p, even, odd);
    const __m512i halves = (__m512i)_mm512_cvtne2ps_pbh(odd, even);  // even's 16 values, then odd's
    const __m512i idx = _mm512_setr_epi32(0x00100000, 0x00110001, 0x00120002, 0x00130003, 0x00140004, 0x00150005,
                                          0x00160006, 0x00170007, 0x00180008, 0x00190009, 0x001a000a, 0x001b000b,
                                          0x001c000c, 0x001d000d, 0x001e000e, 0x001f000f);
    _mm512_storeu_si512(p, _mm512_permutexvar_epi16(idx, halves));
  }
};
}  // namespace

const Kernels* avx512bf16_kernels() { return &SimdKernels<Avx512Bf16>::kernels(); }

}  // namespace tierzero::quant

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
