#include "model/vec_kernels.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <immintrin.h>

#define TZ_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

namespace tierzero::ops {

namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

// e^x for x in [-87, 88] (clamped), Cephes expf. Branch-free so loops vectorise.
inline float exp_poly(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float t = x * 1.44269504088896341f + kRound;
  const float n = t - kRound;
  const std::int32_t ni = std::bit_cast<std::int32_t>(t) - std::bit_cast<std::int32_t>(kRound);
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  return y * std::bit_cast<float>((ni + 127) << 23);
}

// tanh(u) = 1 - 2 / (e^{2u} + 1)
inline float tanh_poly(float u) { return 1.0f - 2.0f / (exp_poly(2.0f * u) + 1.0f); }
}  // namespace

TZ_CLONES void softmax_inplace(float* row, int n) {
  float mx = row[0];
  for (int i = 1; i < n; ++i) mx = row[i] > mx ? row[i] : mx;
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < n; ++i) {
    row[i] = exp_poly(row[i] - mx);
    sum += row[i];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int i = 0; i < n; ++i) row[i] *= inv;
}

void softmax_inplace(double* row, int n) {
  double mx = row[0];
  for (int i = 1; i < n; ++i) mx = std::max(mx, row[i]);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += (row[i] = std::exp(row[i] - mx));
  for (int i = 0; i < n; ++i) row[i] /= sum;
}

TZ_CLONES void gelu_kernel(float* out, const float* x, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    out[i] = 0.5f * v * (1.0f + tanh_poly(kGeluScale * (v + kGeluCubic * v * v * v)));
  }
}

void gelu_kernel(double* out, const double* x, std::size_t n) {
  const double s = 0.7978845608028654;
  for (std::size_t i = 0; i < n; ++i) out[i] = 0.5 * x[i] * (1.0 + std::tanh(s * (x[i] + 0.044715 * x[i] * x[i] * x[i])));
}

TZ_CLONES void gelu_grad_kernel(float* dx, const float* x, const float* dout, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float th = tanh_poly(kGeluScale * (v + kGeluCubic * v * v * v));
    const float grad = 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * kGeluScale * (1.0f + 3.0f * kGeluCubic * v * v);
    dx[i] = grad * dout[i];
  }
}

void gelu_grad_kernel(double* dx, const double* x, const double* dout, std::size_t n) {
  const double s = 0.7978845608028654;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double th = std::tanh(s * (v + 0.044715 * v * v * v));
    dx[i] = (0.5 * (1.0 + th) + 0.5 * v * (1.0 - th * th) * s * (1.0 + 3.0 * 0.044715 * v * v)) * dout[i];
  }
}

namespace {
// AVX512-BF16's conversion: nearest even, NaN quieted as f32_to_bf16 does;
// unlike it, fp32 denormals become zero (no effect on a product's fp32 sum
// beyond 2^-126 of its terms).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void to_bf16_rows_native(std::uint16_t* out, const float* src, int rows, int cols,
                                                                        int ld) {
  for (int r = 0; r < rows; ++r) {
    const float* x = src + static_cast<std::size_t>(r) * ld;
    std::uint16_t* o = out + static_cast<std::size_t>(r) * cols;
    int c = 0;
    for (; c + 32 <= cols; c += 32)
      _mm512_storeu_si512(o + c, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + c + 16), _mm512_loadu_ps(x + c)));
    for (; c < cols; c += 16) {
      const __mmask16 m = cols - c >= 16 ? 0xffff : static_cast<__mmask16>((1u << (cols - c)) - 1);
      _mm256_mask_storeu_epi16(o + c, m, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + c)));
    }
  }
}
}  // namespace

// Branch-free dtype.h f32_to_bf16, so the loop vectorises.
TZ_CLONES void to_bf16_rows_portable(std::uint16_t* out, const float* src, int rows, int cols, int ld) {
  for (int r = 0; r < rows; ++r) {
    const float* x = src + static_cast<std::size_t>(r) * ld;
    std::uint16_t* o = out + static_cast<std::size_t>(r) * cols;
#pragma omp simd
    for (int c = 0; c < cols; ++c) {
      const std::uint32_t u = std::bit_cast<std::uint32_t>(x[c]);
      const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
      const std::uint32_t nan = (u >> 16) | 0x40u;
      o[c] = static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
    }
  }
}

bool to_bf16_rows_is_native() {
  static const bool native = __builtin_cpu_supports("avx512bf16");
  return native;
}

void to_bf16_rows(std::uint16_t* out, const float* src, int rows, int cols, int ld) {
  if (to_bf16_rows_is_native()) to_bf16_rows_native(out, src, rows, cols, ld);
  else to_bf16_rows_portable(out, src, rows, cols, ld);
}

}  // namespace tierzero::ops
