// The element-wise hot loops of the GPT layers (softmax rows, GELU), for
// fp32 vectorised with a polynomial exp (Cephes' expf: range reduction by
// ln 2 and a degree-6 polynomial, ~1 ulp) and compiled for AVX-512, AVX2 and
// baseline x86-64 with run-time selection; for fp64 plain libm (used by
// the gradient checks).
#pragma once
#include <cstddef>
#include <cstdint>

namespace tierzero::ops {

// row[0..n) = softmax(row[0..n)) in place.
void softmax_inplace(float* row, int n);
void softmax_inplace(double* row, int n);
// out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
void gelu_kernel(float* out, const float* x, std::size_t n);
void gelu_kernel(double* out, const double* x, std::size_t n);
// dx = gelu'(x) * dout (written)
void gelu_grad_kernel(float* dx, const float* x, const float* dout, std::size_t n);
void gelu_grad_kernel(double* dx, const double* x, const double* dout, std::size_t n);

// out[r * cols + c] = bf16(src[r * ld + c]) for r < rows, c < cols:
// dtype.h's f32_to_bf16 (nearest even, NaN kept), packed densely; with
// AVX512-BF16's instruction where the CPU has it, which also flushes fp32
// denormals to zero (the GEMMs' operands; to_bf16_rows_portable is exact).
void to_bf16_rows(std::uint16_t* out, const float* src, int rows, int cols, int ld);
// Whether to_bf16_rows runs AVX512-BF16's instruction here (and so flushes denormals).
bool to_bf16_rows_is_native();
void to_bf16_rows_portable(std::uint16_t* out, const float* src, int rows, int cols, int ld);

}  // namespace tierzero::ops
