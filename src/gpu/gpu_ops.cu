// The GPT layers on CUDA (gpu/gpu_ops.h): cuBLAS for every product,
// one small kernel per element-wise or row-wise step. Row-wise kernels
// (LayerNorm, softmax) give one thread block to a row and reduce in
// shared memory; column sums (bias and LayerNorm weight gradients) give
// one thread to a column, and the embedding's backward sums each token's
// rows in position order (no atomics), so every kernel is deterministic:
// two identical runs give identical bits.
#include <cmath>
#include <string>

#include "gpu/launch.h"
#include "gpu/gpu_ops.h"
#if defined(TZ_USE_HIP)
#include <hipcub/hipcub.hpp>
namespace cub = hipcub;
#else
#include <cub/device/device_radix_sort.cuh>
#endif

namespace tierzero::gpu {

namespace {
void check(cublasStatus_t s, const char* what) {
  TZ_CHECK(s == CUBLAS_STATUS_SUCCESS, Error, std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

// Sum of v over the block (every thread gets it). `shared` holds kThreads/32 floats.
__device__ float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o /= 2) v += TZ_SHFL_XOR(v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float s = 0;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) s += shared[w];
  return s;
}

__device__ float block_max(float v, float* shared) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, TZ_SHFL_XOR(v, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float m = shared[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) m = fmaxf(m, shared[w]);
  return m;
}

// The largest of row[0..len) (one block; every thread gets it).
__device__ float row_max(const float* row, int len, float* shared) {
  float m = -INFINITY;
  for (int i = threadIdx.x; i < len; i += blockDim.x) m = fmaxf(m, row[i]);
  return block_max(m, shared);
}

// row[0..len) = exp(row - m) in place (one block); returns their sum (every thread gets it).
__device__ float exp_row(float* row, int len, float m, float* shared) {
  float s = 0;
  for (int i = threadIdx.x; i < len; i += blockDim.x) {
    const float e = expf(row[i] - m);
    row[i] = e;
    s += e;
  }
  return block_sum(s, shared);
}

// In-place softmax of row[0..len) (one block); row[len..width) set to zero.
__device__ void softmax_row(float* row, int len, int width, float* shared) {
  const float inv = 1.0f / exp_row(row, len, row_max(row, len, shared), shared);
  for (int i = threadIdx.x; i < len; i += blockDim.x) row[i] *= inv;
  for (int i = len + threadIdx.x; i < width; i += blockDim.x) row[i] = 0;
}

__global__ void encoder_forward_kernel(float* out, const int* tokens, const float* wte, const float* wpe, int N, int Tn, int C, int v0,
                                       int V) {
  TZ_GRID_STRIDE(i, static_cast<std::size_t>(N) * C) {
    const int n = static_cast<int>(i / C), c = static_cast<int>(i % C), t = n % Tn, row = tokens[n] - v0;
    const float e = row >= 0 && row < V ? wte[static_cast<std::size_t>(row) * C + c] : 0.0f;
    out[i] = e + (wpe ? wpe[static_cast<std::size_t>(t) * C + c] : 0.0f);
  }
}

__global__ void iota_kernel(int* out, int n) {
  TZ_GRID_STRIDE(i, static_cast<std::size_t>(n)) out[i] = static_cast<int>(i);
}

// dwte, deterministically: `ids` are the token ids sorted stably and `order`
// the position each came from, so equal ids form runs in position order. One
// thread per (run, channel) adds the run's gradient rows onto its dwte row
// in that order: the CPU's order (ops.cc), hence its bits, run after run.
__global__ void embedding_rows_backward_kernel(float* dwte, const float* dout, const int* ids, const int* order, int N, int C, int v0,
                                               int V) {
  TZ_GRID_STRIDE(i, static_cast<std::size_t>(N) * C) {
    const int r = static_cast<int>(i / C), c = static_cast<int>(i % C), id = ids[r];
    if (r > 0 && ids[r - 1] == id) continue;  // not the first of its run
    if (id < v0 || id >= v0 + V) continue;    // another vocabulary-parallel member's row
    float* e = dwte + static_cast<std::size_t>(id - v0) * C + c;
    float s = *e;
    for (int j = r; j < N && ids[j] == id; ++j) s += dout[static_cast<std::size_t>(order[j]) * C + c];
    *e = s;
  }
}

// dwpe: one thread per (position, channel) adds the batch's rows in batch order.
__global__ void position_backward_kernel(float* dwpe, const float* dout, int B, int Tn, int C) {
  TZ_GRID_STRIDE(i, static_cast<std::size_t>(Tn) * C) {
    float s = dwpe[i];
    for (int b = 0; b < B; ++b) s += dout[static_cast<std::size_t>(b) * Tn * C + i];
    dwpe[i] = s;
  }
}

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b, int N,
                                         int C) {
  __shared__ float shared[kThreads / 32];
  TZ_BLOCK_STRIDE(row, static_cast<std::size_t>(N)) {
    const float* xr = x + row * C;
    float s = 0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) s += xr[i];
    const float m = block_sum(s, shared) / C;
    float v = 0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) v += (xr[i] - m) * (xr[i] - m);
    const float r = 1.0f / sqrtf(block_sum(v, shared) / C + 1e-5f);
    float* o = out + row * C;
    for (int i = threadIdx.x; i < C; i += blockDim.x) o[i] = (xr[i] - m) * r * w[i] + b[i];
    if (threadIdx.x == 0) mean[row] = m, rstd[row] = r;
  }
}

__global__ void layernorm_backward_dx_kernel(float* dx, const float* dout, const float* x, const float* w, const float* mean,
                                             const float* rstd, int N, int C) {
  __shared__ float shared[kThreads / 32];
  TZ_BLOCK_STRIDE(row, static_cast<std::size_t>(N)) {
    const float *d = dout + row * C, *xr = x + row * C;
    const float m = mean[row], s = rstd[row];
    float a = 0, bsum = 0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
      const float norm = (xr[i] - m) * s, dnorm = w[i] * d[i];
      a += dnorm, bsum += dnorm * norm;
    }
    const float dnorm_mean = block_sum(a, shared) / C;
    const float dnorm_norm_mean = block_sum(bsum, shared) / C;
    float* dxr = dx + row * C;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
      const float norm = (xr[i] - m) * s;
      dxr[i] += (w[i] * d[i] - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
}

__global__ void rmsnorm_forward_kernel(float* out, float* rstd, const float* x, const float* w, int N, int C, float eps) {
  __shared__ float shared[kThreads / 32];
  TZ_BLOCK_STRIDE(row, static_cast<std::size_t>(N)) {
    const float* xr = x + row * C;
    float ss = 0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) ss += xr[i] * xr[i];
    const float r = 1.0f / sqrtf(block_sum(ss, shared) / C + eps);
    float* o = out + row * C;
    for (int i = threadIdx.x; i < C; i += blockDim.x) o[i] = xr[i] * r * w[i];
    if (threadIdx.x == 0) rstd[row] = r;
  }
}

// The CPU's rule (model/ops.h): dx += s (w dy - x s^2 mean(w dy x)).
__global__ void rmsnorm_backward_dx_kernel(float* dx, const float* dout, const float* x, const float* w, const float* rstd, int N, int C) {
  __shared__ float shared[kThreads / 32];
  TZ_BLOCK_STRIDE(row, static_cast<std::size_t>(N)) {
    const float *d = dout + row * C, *xr = x + row * C;
    const float s = rstd[row];
    float dot = 0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) dot += w[i] * d[i] * xr[i];
    const float k = block_sum(dot, shared) * s * s / C;
    float* dxr = dx + row * C;
    for (int i = threadIdx.x; i < C; i += blockDim.x) dxr[i] += s * (w[i] * d[i] - xr[i] * k);
  }
}

// Turns the query and key heads of each row of qkv by +angle (sign 1) or
// -angle (sign -1), one thread per rotated pair.
__global__ void rope_kernel(float* qkv, const float* cos, const float* sin, int N, int Tn, int H, int KV, int D, float sign) {
  const int half = D / 2, W = (H + 2 * KV) * D;
  TZ_GRID_STRIDE(idx, static_cast<std::size_t>(N) * (H + KV) * half) {
    const std::size_t n = idx / (static_cast<std::size_t>(H + KV) * half);
    const int rest = static_cast<int>(idx % (static_cast<std::size_t>(H + KV) * half)), h = rest / half, i = rest % half;
    const int t = static_cast<int>(n % Tn);
    float* x = qkv + n * W + static_cast<std::size_t>(h) * D;
    const float c = cos[static_cast<std::size_t>(t) * half + i], sn = sign * sin[static_cast<std::size_t>(t) * half + i];
    const float a = x[i], z = x[i + half];
    x[i] = a * c - z * sn;
    x[i + half] = z * c + a * sn;
  }
}

__global__ void swiglu_forward_kernel(float* out, const float* x, int N, int F) {
  TZ_GRID_STRIDE(idx, static_cast<std::size_t>(N) * F) {
    const std::size_t n = idx / F, i = idx % F;
    const float g = x[n * 2 * F + i], u = x[n * 2 * F + F + i];
    out[idx] = g / (1.0f + expf(-g)) * u;
  }
}

__global__ void swiglu_backward_kernel(float* dx, const float* x, const float* dout, int N, int F) {
  TZ_GRID_STRIDE(idx, static_cast<std::size_t>(N) * F) {
    const std::size_t n = idx / F, i = idx % F;
    const float g = x[n * 2 * F + i], u = x[n * 2 * F + F + i], d = dout[idx];
    const float sig = 1.0f / (1.0f + expf(-g));
    dx[n * 2 * F + F + i] = d * g * sig;
    dx[n * 2 * F + i] = d * u * sig * (1.0f + g * (1.0f - sig));
  }
}

// Column sums, dw[c] += sum_n norm[n,c] * dout[n,c] (when x is given;
// norm = (x - mean) rstd, mean null for RMSNorm) and
// db[c] += sum_n dout[n,c], in two deterministic passes: the rows are cut
// into chunks of kColumnChunk; pass 1 sums each (chunk, column) in row order
// into partial[chunk * C + c] (adjacent threads take adjacent columns, so
// the loads coalesce, and N / kColumnChunk x C threads share the work);
// pass 2 adds each column's partials in chunk order. The same order, so the
// same bits, on every run.
constexpr int kColumnChunk = 32;

__global__ void column_partials_kernel(float* pw, float* pb, const float* dout, const float* x, const float* mean, const float* rstd,
                                       int N, int C) {
  const std::size_t chunks = (static_cast<std::size_t>(N) + kColumnChunk - 1) / kColumnChunk;
  TZ_GRID_STRIDE(idx, chunks * C) {
    const std::size_t c = idx % C, chunk = idx / C;
    const int first = static_cast<int>(chunk) * kColumnChunk, last = min(N, first + kColumnChunk);
    float sw = 0, sb = 0;
    for (int n = first; n < last; ++n) {
      const float d = dout[static_cast<std::size_t>(n) * C + c];
      sb += d;
      if (pw) sw += (x[static_cast<std::size_t>(n) * C + c] - (mean ? mean[n] : 0.0f)) * rstd[n] * d;
    }
    pb[idx] = sb;
    if (pw) pw[idx] = sw;
  }
}

__global__ void column_finish_kernel(float* dw, float* db, const float* pw, const float* pb, std::size_t chunks, int C) {
  TZ_GRID_STRIDE(c, static_cast<std::size_t>(C)) {
    float sw = 0, sb = 0;
    for (std::size_t k = 0; k < chunks; ++k) {
      sb += pb[k * C + c];
      if (pw) sw += pw[k * C + c];
    }
    if (dw) dw[c] += sw;
    if (db) db[c] += sb;
  }
}

// dw (with x, mean, rstd) and db, either may be null; partials in the context's scratch.
void column_sums(float* dw, float* db, const float* dout, const float* x, const float* mean, const float* rstd, int N, int C) {
  const std::size_t chunks = (static_cast<std::size_t>(N) + kColumnChunk - 1) / kColumnChunk, cells = chunks * C;
  auto* pb = static_cast<float*>(GpuContext::current().scratch(2 * cells * sizeof(float)));
  float* pw = dw ? pb + cells : nullptr;
  column_partials_kernel<<<grid_for(cells), kThreads, 0, stream()>>>(pw, pb, dout, x, mean, rstd, N, C);
  launched("column sums, pass 1");
  column_finish_kernel<<<grid_for(C), kThreads, 0, stream()>>>(dw, db, pw, pb, chunks, C);
  launched("column sums, pass 2");
}

__global__ void add_bias_kernel(float* out, const float* b, std::size_t n, int OC) {
  TZ_GRID_STRIDE(i, n) out[i] += b[i % OC];
}

// GELU, tanh approximation, as the CPU kernels.
constexpr float kGeluScale = 0.7978845608028654f, kGeluCubic = 0.044715f;

__global__ void gelu_forward_kernel(float* out, const float* x, std::size_t n) {
  TZ_GRID_STRIDE(i, n) {
    const float v = x[i];
    out[i] = 0.5f * v * (1.0f + tanhf(kGeluScale * (v + kGeluCubic * v * v * v)));
  }
}

__global__ void gelu_backward_kernel(float* dx, const float* x, const float* dout, std::size_t n) {
  TZ_GRID_STRIDE(i, n) {
    const float v = x[i], th = tanhf(kGeluScale * (v + kGeluCubic * v * v * v));
    dx[i] = (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * kGeluScale * (1.0f + 3.0f * kGeluCubic * v * v)) * dout[i];
  }
}

__global__ void residual_kernel(float* out, const float* a, const float* b, std::size_t n) {
  TZ_GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}

// Rows of [rows, Tn] score matrices, row index r: causal softmax over columns <= r % Tn.
__global__ void causal_softmax_kernel(float* att, std::size_t rows, int Tn) {
  __shared__ float shared[kThreads / 32];
  TZ_BLOCK_STRIDE(r, rows) softmax_row(att + r * Tn, static_cast<int>(r % Tn) + 1, Tn, shared);
}

// dS = P * (dP - sum(dP * P)) over the causal part of each row, zero elsewhere (in place in dp).
__global__ void causal_softmax_backward_kernel(float* dp, const float* p, std::size_t rows, int Tn) {
  __shared__ float shared[kThreads / 32];
  TZ_BLOCK_STRIDE(r, rows) {
    const int len = static_cast<int>(r % Tn) + 1;
    float* row = dp + r * Tn;
    const float* pr = p + r * Tn;
    float dot = 0;
    for (int i = threadIdx.x; i < len; i += blockDim.x) dot += row[i] * pr[i];
    dot = block_sum(dot, shared);
    for (int i = threadIdx.x; i < Tn; i += blockDim.x) row[i] = i < len ? pr[i] * (row[i] - dot) : 0.0f;
  }
}

// Softmax of each logits row in place; loss[n] = -log p[target].
__global__ void softmax_ce_kernel(float* probs, float* loss, const int* targets, std::size_t rows, int V) {
  __shared__ float shared[kThreads / 32];
  TZ_BLOCK_STRIDE(n, rows) {
    float* row = probs + n * V;
    softmax_row(row, V, V, shared);
    __syncthreads();
    if (threadIdx.x == 0) loss[n] = -logf(row[targets[n]]);
  }
}

// dlogits = (probs - onehot(target - v0)) * s, in place.
__global__ void ce_backward_kernel(float* probs, const int* targets, float s, std::size_t rows, int V, int v0) {
  TZ_BLOCK_STRIDE(n, rows) {
    float* row = probs + n * V;
    for (int i = threadIdx.x; i < V; i += blockDim.x) row[i] = (row[i] - (i == targets[n] - v0 ? 1.0f : 0.0f)) * s;
  }
}

// The vocabulary-parallel loss's steps (gpu_ops.h), one block per row.
__global__ void vocab_max_kernel(float* max, const float* logits, std::size_t rows, int V) {
  __shared__ float shared[kThreads / 32];
  TZ_BLOCK_STRIDE(n, rows) {
    const float m = row_max(logits + n * V, V, shared);
    if (threadIdx.x == 0) max[n] = m;
  }
}

__global__ void vocab_exp_sums_kernel(float* logits, float* sums, const float* maxima, int G, const int* targets, std::size_t rows,
                                      int V, int v0) {
  __shared__ float shared[kThreads / 32];
  TZ_BLOCK_STRIDE(n, rows) {
    float m = maxima[n];
    for (int g = 1; g < G; ++g) m = fmaxf(m, maxima[g * rows + n]);
    float* row = logits + n * V;
    const int v = targets[n] - v0;
    const float target = v >= 0 && v < V ? row[v] - m : 0.0f;
    __syncthreads();  // every thread has read the target's logit before it is overwritten
    const float s = exp_row(row, V, m, shared);
    if (threadIdx.x == 0) sums[n] = s, sums[rows + n] = target;
  }
}

__global__ void vocab_softmax_loss_kernel(float* probs, float* loss, const float* sums, std::size_t rows, int V) {
  TZ_BLOCK_STRIDE(n, rows) {
    float* row = probs + n * V;
    const float inv = 1.0f / sums[n];
    for (int i = threadIdx.x; i < V; i += blockDim.x) row[i] *= inv;
    if (threadIdx.x == 0) loss[n] = logf(sums[n]) - sums[rows + n];
  }
}

__global__ void sum_kernel(const float* x, int n, double* out) {
  __shared__ float shared[kThreads / 32];
  float s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
  s = block_sum(s, shared);
  if (threadIdx.x == 0) *out = s;
}
}  // namespace

// ---------------------------------------------------------------- ops

void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc, int batch, long long sa, long long sb, long long sc) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  GpuContext& ctx = GpuContext::current();
  const cublasComputeType_t math = ctx.math == MatmulType::bf16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
  check(cublasGemmStridedBatchedEx(static_cast<cublasHandle_t>(ctx.blas()), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_32F, ldb, sb, a, CUDA_R_32F,
                                   lda, sa, &beta, c, CUDA_R_32F, ldc, sc, batch, math, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int Tn, int C, int v0, int V) {
  const std::size_t n = static_cast<std::size_t>(B) * Tn * C;
  encoder_forward_kernel<<<grid_for(n), kThreads, 0, stream()>>>(out, tokens, wte, wpe, B * Tn, Tn, C, v0, V);
  launched("encoder_forward");
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int Tn, int C, int v0, int V) {
  const int N = B * Tn;
  // Scratch: the sorted ids, their positions, the positions in order, then the sort's own temporary storage.
  const auto align = [](std::size_t b) { return (b + 255) / 256 * 256; };
  const std::size_t ints = align(static_cast<std::size_t>(N) * sizeof(int));
  std::size_t sort_bytes = 0;
  check(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, tokens, static_cast<int*>(nullptr), static_cast<const int*>(nullptr),
                                        static_cast<int*>(nullptr), N, 0, static_cast<int>(sizeof(int) * 8), stream()),
        "DeviceRadixSort (size)");
  auto* base = static_cast<char*>(GpuContext::current().scratch(3 * ints + sort_bytes));
  auto *ids = reinterpret_cast<int*>(base), *order = reinterpret_cast<int*>(base + ints), *positions = reinterpret_cast<int*>(base + 2 * ints);
  iota_kernel<<<grid_for(N), kThreads, 0, stream()>>>(positions, N);
  check(cub::DeviceRadixSort::SortPairs(base + 3 * ints, sort_bytes, tokens, ids, positions, order, N, 0,
                                        static_cast<int>(sizeof(int) * 8), stream()),
        "DeviceRadixSort");
  embedding_rows_backward_kernel<<<grid_for(static_cast<std::size_t>(N) * C), kThreads, 0, stream()>>>(dwte, dout, ids, order, N, C, v0, V);
  if (dwpe) position_backward_kernel<<<grid_for(static_cast<std::size_t>(Tn) * C), kThreads, 0, stream()>>>(dwpe, dout, B, Tn, C);
  launched("encoder_backward");
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b, int N, int C) {
  layernorm_forward_kernel<<<grid_for(N, 1), kThreads, 0, stream()>>>(out, mean, rstd, x, w, b, N, C);
  launched("layernorm_forward");
}

void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w, const float* mean,
                        const float* rstd, int N, int C) {
  layernorm_backward_dx_kernel<<<grid_for(N, 1), kThreads, 0, stream()>>>(dx, dout, x, w, mean, rstd, N, C);
  launched("layernorm_backward");
  column_sums(dw, db, dout, x, mean, rstd, N, C);
}

void rmsnorm_forward(float* out, float* rstd, const float* x, const float* w, int N, int C, float eps) {
  rmsnorm_forward_kernel<<<grid_for(N, 1), kThreads, 0, stream()>>>(out, rstd, x, w, N, C, eps);
  launched("rmsnorm_forward");
}

void rmsnorm_backward(float* dx, float* dw, const float* dout, const float* x, const float* w, const float* rstd, int N, int C) {
  rmsnorm_backward_dx_kernel<<<grid_for(N, 1), kThreads, 0, stream()>>>(dx, dout, x, w, rstd, N, C);
  launched("rmsnorm_backward");
  column_sums(dw, nullptr, dout, x, nullptr, rstd, N, C);
}

void rope_forward(float* qkv, const float* cos, const float* sin, int B, int Tn, int H, int KV, int D) {
  const std::size_t n = static_cast<std::size_t>(B) * Tn * (H + KV) * (D / 2);
  rope_kernel<<<grid_for(n), kThreads, 0, stream()>>>(qkv, cos, sin, B * Tn, Tn, H, KV, D, 1.0f);
  launched("rope_forward");
}

void rope_backward(float* dqkv, const float* cos, const float* sin, int B, int Tn, int H, int KV, int D) {
  const std::size_t n = static_cast<std::size_t>(B) * Tn * (H + KV) * (D / 2);
  rope_kernel<<<grid_for(n), kThreads, 0, stream()>>>(dqkv, cos, sin, B * Tn, Tn, H, KV, D, -1.0f);
  launched("rope_backward");
}

void swiglu_forward(float* out, const float* x, int N, int F) {
  swiglu_forward_kernel<<<grid_for(static_cast<std::size_t>(N) * F), kThreads, 0, stream()>>>(out, x, N, F);
  launched("swiglu_forward");
}

void swiglu_backward(float* dx, const float* x, const float* dout, int N, int F) {
  swiglu_backward_kernel<<<grid_for(static_cast<std::size_t>(N) * F), kThreads, 0, stream()>>>(dx, x, dout, N, F);
  launched("swiglu_backward");
}

void matmul_forward(float* out, const float* x, const float* w, const float* b, int N, int IC, int OC) {
  gemm(false, true, N, OC, IC, 1.0f, x, IC, w, IC, 0.0f, out, OC);
  if (!b) return;
  const std::size_t n = static_cast<std::size_t>(N) * OC;
  add_bias_kernel<<<grid_for(n), kThreads, 0, stream()>>>(out, b, n, OC);
  launched("matmul_forward bias");
}

void matmul_backward_input(float* dx, const float* dout, const float* w, int N, int IC, int OC) {
  gemm(false, false, N, IC, OC, 1.0f, dout, OC, w, IC, 0.0f, dx, IC);
}

void matmul_backward_weight(float* dw, float* db, const float* dout, const float* x, int N, int IC, int OC) {
  gemm(true, false, OC, IC, N, 1.0f, dout, OC, x, IC, 1.0f, dw, IC);
  if (!db) return;
  column_sums(nullptr, db, dout, nullptr, nullptr, nullptr, N, OC);
}

void matmul_backward(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w, int N, int IC, int OC) {
  matmul_backward_input(dx, dout, w, N, IC, OC);
  matmul_backward_weight(dw, db, dout, x, N, IC, OC);
}

// Multi-head attention (one query head per key/value head) runs each
// sequence's heads as one batched product; grouped-query attention batches
// the query heads that read one key/value head (kv.first_reader; the
// key/value operand's stride 0), and in backward adds each query head's
// key/value gradient in turn (beta 1 after the first of them).
void attention_forward(float* out, float* att, const float* qkv, int B, int Tn, int C, int H, KvHeads kv) {
  const int hs = C / H, KV = kv.count, W = C + 2 * KV * hs;
  const bool mha = kv.group == 1;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const long long tt = static_cast<long long>(Tn) * Tn, kv_stride = mha ? hs : 0;
  for (int b = 0; b < B; ++b) {
    const float* seq = qkv + static_cast<std::size_t>(b) * Tn * W;
    float* a = att + static_cast<std::size_t>(b) * H * tt;
    float* y = out + static_cast<std::size_t>(b) * Tn * C;
    // One product per key/value head and the query heads reading it (every head at once for multi-head attention).
    for (int g = 0; g < (mha ? 1 : KV); ++g) {
      const int h0 = mha ? 0 : kv.first_reader(g, H), heads = mha ? H : kv.first_reader(g + 1, H) - h0;
      const float* q = seq + static_cast<std::size_t>(h0) * hs;
      const float* k = seq + C + static_cast<std::size_t>(g) * hs;
      const float* v = k + static_cast<std::size_t>(KV) * hs;
      gemm(false, true, Tn, Tn, hs, scale, q, W, k, W, 0.0f, a + h0 * tt, Tn, heads, hs, kv_stride, tt);  // scores = q k^T / sqrt(hs)
      const std::size_t rows = static_cast<std::size_t>(heads) * Tn;
      causal_softmax_kernel<<<grid_for(rows, 1), kThreads, 0, stream()>>>(a + h0 * tt, rows, Tn);
      launched("attention softmax");
      gemm(false, false, Tn, hs, Tn, 1.0f, a + h0 * tt, Tn, v, W, 0.0f, y + static_cast<std::size_t>(h0) * hs, C, heads, tt, kv_stride, hs);
    }
  }
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, float* scratch, int B, int Tn, int C,
                        int H, KvHeads kv) {
  const int hs = C / H, KV = kv.count, W = C + 2 * KV * hs;
  const bool mha = kv.group == 1;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const long long tt = static_cast<long long>(Tn) * Tn;
  TZ_CHECK(scratch, Error,
           "attention_backward needs a scratch of attention_scratch(Tn, H) = " + std::to_string(attention_scratch(Tn, H)) + " floats");
  float* da = scratch;  // attention_scratch(Tn, H) elements: one sequence's score gradients
  for (int b = 0; b < B; ++b) {
    const float* seq = qkv + static_cast<std::size_t>(b) * Tn * W;
    float* dseq = dqkv + static_cast<std::size_t>(b) * Tn * W;
    const float* a = att + static_cast<std::size_t>(b) * H * tt;
    const float* dy = dout + static_cast<std::size_t>(b) * Tn * C;
    const float *k = seq + C, *v = seq + C + static_cast<std::size_t>(KV) * hs;
    float *dk = dseq + C, *dv = dseq + C + static_cast<std::size_t>(KV) * hs;
    if (mha) {  // every head at once
      gemm(false, true, Tn, Tn, hs, 1.0f, dy, C, v, W, 0.0f, da, Tn, H, hs, hs, tt);        // dP = dY V^T
      gemm(true, false, Tn, hs, Tn, 1.0f, a, Tn, dy, C, 0.0f, dv, W, H, tt, hs, hs);        // dV = P^T dY
    } else {
      for (int g = 0; g < KV; ++g) {
        const std::size_t h0 = static_cast<std::size_t>(kv.first_reader(g, H));
        const int heads = kv.first_reader(g + 1, H) - static_cast<int>(h0);
        gemm(false, true, Tn, Tn, hs, 1.0f, dy + h0 * hs, C, v + g * hs, W, 0.0f, da + h0 * tt, Tn, heads, hs, 0, tt);
        for (int r = 0; r < heads; ++r)
          gemm(true, false, Tn, hs, Tn, 1.0f, a + (h0 + r) * tt, Tn, dy + (h0 + r) * hs, C, r == 0 ? 0.0f : 1.0f, dv + g * hs, W);
      }
    }
    const std::size_t rows = static_cast<std::size_t>(H) * Tn;
    causal_softmax_backward_kernel<<<grid_for(rows, 1), kThreads, 0, stream()>>>(da, a, rows, Tn);
    launched("attention softmax backward");
    if (mha) {
      gemm(false, false, Tn, hs, Tn, scale, da, Tn, k, W, 0.0f, dseq, W, H, tt, hs, hs);  // dQ = dS K / sqrt(hs)
      gemm(true, false, Tn, hs, Tn, scale, da, Tn, seq, W, 0.0f, dk, W, H, tt, hs, hs);  // dK = dS^T Q / sqrt(hs)
    } else {
      for (int g = 0; g < KV; ++g) {
        const std::size_t h0 = static_cast<std::size_t>(kv.first_reader(g, H));
        const int heads = kv.first_reader(g + 1, H) - static_cast<int>(h0);
        gemm(false, false, Tn, hs, Tn, scale, da + h0 * tt, Tn, k + g * hs, W, 0.0f, dseq + h0 * hs, W, heads, tt, 0, hs);
        for (int r = 0; r < heads; ++r)
          gemm(true, false, Tn, hs, Tn, scale, da + (h0 + r) * tt, Tn, seq + (h0 + r) * hs, W, r == 0 ? 0.0f : 1.0f, dk + g * hs, W);
      }
    }
  }
}

void gelu_forward(float* out, const float* x, std::size_t n) {
  gelu_forward_kernel<<<grid_for(n), kThreads, 0, stream()>>>(out, x, n);
  launched("gelu_forward");
}

void gelu_backward(float* dx, const float* x, const float* dout, std::size_t n) {
  gelu_backward_kernel<<<grid_for(n), kThreads, 0, stream()>>>(dx, x, dout, n);
  launched("gelu_backward");
}

void residual_forward(float* out, const float* a, const float* b, std::size_t n) {
  residual_kernel<<<grid_for(n), kThreads, 0, stream()>>>(out, a, b, n);
  launched("residual_forward");
}

namespace {
// The mean of the rows' losses that `write` (loss[N] in device scratch) leaves.
template <class F>
double mean_loss(int N, F&& write) {
  auto* total = static_cast<double*>(GpuContext::current().scratch(sizeof(double) + sizeof(float) * N));
  auto* loss = reinterpret_cast<float*>(total + 1);
  write(loss);
  sum_kernel<<<1, kThreads, 0, stream()>>>(loss, N, total);
  double sum = 0;
  to_host(&sum, total, sizeof sum);
  return sum / N;
}
}  // namespace

double head_forward(float* probs, const float* x, const float* wte, const int* targets, int N, int C, int V) {
  gemm(false, true, N, V, C, 1.0f, x, C, wte, C, 0.0f, probs, V);
  return mean_loss(N, [&](float* loss) {
    softmax_ce_kernel<<<grid_for(N, 1), kThreads, 0, stream()>>>(probs, loss, targets, N, V);
    launched("head_forward");
  });
}

void vocab_max(float* max, const float* logits, int N, int V) {
  vocab_max_kernel<<<grid_for(N, 1), kThreads, 0, stream()>>>(max, logits, N, V);
  launched("vocab_max");
}

void vocab_exp_sums(float* logits, float* sums, const float* maxima, int G, const int* targets, int N, int V, int v0) {
  vocab_exp_sums_kernel<<<grid_for(N, 1), kThreads, 0, stream()>>>(logits, sums, maxima, G, targets, N, V, v0);
  launched("vocab_exp_sums");
}

double vocab_softmax_loss(float* probs, const float* sums, int N, int V) {
  return mean_loss(N, [&](float* loss) {
    vocab_softmax_loss_kernel<<<grid_for(N, 1), kThreads, 0, stream()>>>(probs, loss, sums, N, V);
    launched("vocab_softmax_loss");
  });
}

void head_backward(float* dx, float* dwte, float* probs, const float* x, const float* wte, const int* targets, float dloss, int N,
                   int C, int V, int v0) {
  ce_backward_kernel<<<grid_for(N, 1), kThreads, 0, stream()>>>(probs, targets, dloss / static_cast<float>(N), N, V, v0);
  launched("head_backward");
  gemm(false, false, N, C, V, 1.0f, probs, V, wte, C, 0.0f, dx, C);
  gemm(true, false, V, C, N, 1.0f, probs, V, x, C, 1.0f, dwte, C);
}

}  // namespace tierzero::gpu
