// The AVX-512 (F, BW, VL) quantisation kernels.
// Compiled for the vector ISA through a target pragma (GCC's, or clang's attribute); -ffp-contract=off.
#include <immintrin.h>

#include "quant/quant_block.h"

// Only what follows is compiled for the vector ISA: the shared headers above
// keep the baseline target, so their out-of-line copies run on any x86-64.
#if defined(__clang__)  // clang ignores GCC's target pragma
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,f16c")
#endif
#include "quant/quant_avx512_traits.h"

namespace tierzero::quant {

const Kernels* avx512_kernels() { return &SimdKernels<Avx512>::kernels(); }

}  // namespace tierzero::quant

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
