// The CPU model's matrix products: row-major C[M,N] = alpha op(A) op(B) +
// beta C, with op a transpose or not.
//
// Kernels: fp32 through oneDNN's sgemm, which picks its kernels from the
// CPU's instruction set at run time (AVX-512, AVX2, ...) whatever an
// OPENBLAS_CORETYPE in the environment says (OpenBLAS 0.3.21 falls back to
// SSE3 "Prescott" kernels on CPUs it does not know, and a forced "Haswell"
// halves the AVX-512 rate); fp64 (the gradient checks) through OpenBLAS.
// With MatmulType::bf16 the fp32 operands are rounded to bf16 (nearest
// even) and multiplied on the CPU's bf16 units (AMX, AVX512-BF16) with fp32
// accumulation and an fp32 result, through oneDNN's matmul; on a CPU
// without them fp32 is used (gemm_info() says which).
//
// Threading: the math is the calling thread's (set_matmul); GEMMs use the
// thread count of set_blas_threads (default: OMP_NUM_THREADS, else
// OPENBLAS_NUM_THREADS, else every core). bf16 products keep per-thread
// conversion buffers and primitives (one per shape), so the steady state
// allocates nothing.
#pragma once
#include <string>
#include <vector>

#include "tierzero/dtype.h"

namespace tierzero::ops {

template <class T>
void gemm(bool trans_a, bool trans_b, int m, int n, int k, T alpha, const T* a, int lda, const T* b, int ldb, T beta,
          T* c, int ldc);

// The calling thread's GEMM math for float products (MatmulType::automatic
// is resolved by the caller, tierzero/dtype.h's resolve_matmul).
void set_matmul(MatmulType t);
MatmulType matmul();
// True when this CPU multiplies bf16 on matrix units (AMX or AVX512-BF16).
bool cpu_has_bf16_units();
// Those units against the CPU's fp32 FMAs, measured (model/cpu_peaks.h).
Bf16Units cpu_bf16_units();
// One bf16 product the calling thread ran (its gemm arguments less the
// pointers and the operands' leading dimensions) and the oneDNN
// implementation that served it. A plain value.
struct Bf16GemmKernel {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  float alpha = 1, beta = 0;
  int ldc = 0;
  std::string impl;  // oneDNN's name, e.g. "brg:avx512_core_bf16"
  // "MxNxK TA" (T/N per operand), e.g. "64x64x16 NT".
  std::string shape() const;
};
// Every bf16 product shape the calling thread ran so far, each once.
std::vector<Bf16GemmKernel> bf16_gemm_kernels();

// Threads for GEMMs (the other layers run on the calling thread).
void set_blas_threads(int n);
// The threads a GEMM of the calling thread runs on (set_blas_threads', else the default above).
int blas_threads();

// One line naming the kernels in use, e.g. "fp32: oneDNN 2.6.3 avx512_core_bf16;
// bf16: avx512_core_bf16; fp64: OpenBLAS Haswell" (for logs and benchmark JSON).
std::string gemm_info();
// Empty, or what to do when GEMMs would run on kernels slower than the CPU
// allows (said once at start by the CLI).
std::string gemm_warning(MatmulType used);
// The CPU's model name with its x86 family and model numbers
// (/proc/cpuinfo), for benchmark records: virtual machines often name only
// the vendor and line ("AMD EPYC"), the numbers tell the generation.
std::string cpu_model_name();

}  // namespace tierzero::ops
