#include "model/ops.h"

#include "model/vec_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace tierzero::ops {

void rope_tables(double* cos, double* sin, int Tn, int D, double theta, const RopeScaling& scaling) {
  const int half = D / 2;
  constexpr double kPi = 3.14159265358979323846;
  for (int i = 0; i < half; ++i) {
    double inv = std::pow(theta, -2.0 * i / D);
    if (scaling.factor > 0) {  // transformers' _compute_llama3_parameters
      const double wavelen = 2 * kPi / inv, old = scaling.original_context;
      const double low_wavelen = old / scaling.low_freq_factor, high_wavelen = old / scaling.high_freq_factor;
      if (wavelen > low_wavelen) {
        inv /= scaling.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old / wavelen - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor);
        inv = (1 - smooth) * inv / scaling.factor + smooth * inv;
      }
    }
    for (int t = 0; t < Tn; ++t) {
      cos[static_cast<std::size_t>(t) * half + i] = std::cos(t * inv);
      sin[static_cast<std::size_t>(t) * half + i] = std::sin(t * inv);
    }
  }
}

template <class T>
void encoder_forward(T* out, const int* tokens, const T* wte, const T* wpe, int B, int Tn, int C, int v0, int V) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tn; ++t) {
      T* o = out + (static_cast<std::size_t>(b) * Tn + t) * C;
      const int row = tokens[b * Tn + t] - v0;
      if (row < 0 || row >= V) {
        if (wpe) std::copy_n(wpe + static_cast<std::size_t>(t) * C, C, o);
        else std::fill_n(o, C, T(0));
        continue;
      }
      const T* e = wte + static_cast<std::size_t>(row) * C;
      if (!wpe) {
        std::copy(e, e + C, o);
        continue;
      }
      const T* p = wpe + static_cast<std::size_t>(t) * C;
      for (int i = 0; i < C; ++i) o[i] = e[i] + p[i];
    }
}

template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const int* tokens, int B, int Tn, int C, int v0, int V) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tn; ++t) {
      const T* d = dout + (static_cast<std::size_t>(b) * Tn + t) * C;
      if (const int row = tokens[b * Tn + t] - v0; row >= 0 && row < V) {
        T* e = dwte + static_cast<std::size_t>(row) * C;
        for (int i = 0; i < C; ++i) e[i] += d[i];
      }
      if (!dwpe) continue;
      T* p = dwpe + static_cast<std::size_t>(t) * C;
      for (int i = 0; i < C; ++i) p[i] += d[i];
    }
}

template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* w, const T* b, int N, int C) {
  for (int n = 0; n < N; ++n) {
    const T* xr = x + static_cast<std::size_t>(n) * C;
    T m = 0;
#pragma omp simd reduction(+ : m)
    for (int i = 0; i < C; ++i) m += xr[i];
    m /= C;
    T v = 0;
#pragma omp simd reduction(+ : v)
    for (int i = 0; i < C; ++i) v += (xr[i] - m) * (xr[i] - m);
    v /= C;
    const T s = T(1) / std::sqrt(v + T(1e-5));
    T* o = out + static_cast<std::size_t>(n) * C;
#pragma omp simd
    for (int i = 0; i < C; ++i) o[i] = (xr[i] - m) * s * w[i] + b[i];
    mean[n] = m;
    rstd[n] = s;
  }
}

template <class T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, const T* mean, const T* rstd, int N,
                        int C) {
  for (int n = 0; n < N; ++n) {
    const T* d = dout + static_cast<std::size_t>(n) * C;
    const T* xr = x + static_cast<std::size_t>(n) * C;
    T* dxr = dx + static_cast<std::size_t>(n) * C;
    const T m = mean[n], s = rstd[n];
    T dnorm_mean = 0, dnorm_norm_mean = 0;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
    for (int i = 0; i < C; ++i) {
      const T norm = (xr[i] - m) * s;
      const T dnorm = w[i] * d[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
#pragma omp simd
    for (int i = 0; i < C; ++i) {
      const T norm = (xr[i] - m) * s;
      const T dnorm = w[i] * d[i];
      db[i] += d[i];
      dw[i] += norm * d[i];
      dxr[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
}

template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* x, const T* w, int N, int C, T eps) {
  for (int n = 0; n < N; ++n) {
    const T* xr = x + static_cast<std::size_t>(n) * C;
    T ss = 0;
#pragma omp simd reduction(+ : ss)
    for (int i = 0; i < C; ++i) ss += xr[i] * xr[i];
    const T s = T(1) / std::sqrt(ss / C + eps);
    T* o = out + static_cast<std::size_t>(n) * C;
#pragma omp simd
    for (int i = 0; i < C; ++i) o[i] = xr[i] * s * w[i];
    rstd[n] = s;
  }
}

// y = x s w with s = (mean(x^2) + eps)^-1/2: dL/dx_i = s (w_i dy_i - x_i s^2 mean_j(w_j dy_j x_j)).
template <class T>
void rmsnorm_backward(T* dx, T* dw, const T* dout, const T* x, const T* w, const T* rstd, int N, int C) {
  for (int n = 0; n < N; ++n) {
    const T* d = dout + static_cast<std::size_t>(n) * C;
    const T* xr = x + static_cast<std::size_t>(n) * C;
    T* dxr = dx + static_cast<std::size_t>(n) * C;
    const T s = rstd[n];
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int i = 0; i < C; ++i) dot += w[i] * d[i] * xr[i];
    const T k = dot * s * s / C;
#pragma omp simd
    for (int i = 0; i < C; ++i) {
      dw[i] += xr[i] * s * d[i];
      dxr[i] += s * (w[i] * d[i] - xr[i] * k);
    }
  }
}

namespace {
// Turns each rotated head of qkv by +angle (sign 1) or -angle (sign -1).
template <class T>
void rope_turn(T* qkv, const T* cos, const T* sin, int B, int Tn, int H, int KV, int D, T sign) {
  const int half = D / 2, W = (H + 2 * KV) * D;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tn; ++t) {
      T* row = qkv + (static_cast<std::size_t>(b) * Tn + t) * W;
      const T* c = cos + static_cast<std::size_t>(t) * half;
      const T* s = sin + static_cast<std::size_t>(t) * half;
      for (int h = 0; h < H + KV; ++h) {  // the query heads, then the key heads
        T* x = row + static_cast<std::size_t>(h) * D;
        for (int i = 0; i < half; ++i) {
          const T a = x[i], z = x[i + half], sn = sign * s[i];
          x[i] = a * c[i] - z * sn;
          x[i + half] = z * c[i] + a * sn;
        }
      }
    }
}
}  // namespace

template <class T>
void rope_forward(T* qkv, const T* cos, const T* sin, int B, int Tn, int H, int KV, int D) {
  rope_turn(qkv, cos, sin, B, Tn, H, KV, D, T(1));
}

template <class T>
void rope_backward(T* dqkv, const T* cos, const T* sin, int B, int Tn, int H, int KV, int D) {
  rope_turn(dqkv, cos, sin, B, Tn, H, KV, D, T(-1));
}

template <class T>
void matmul_forward(T* out, const T* x, const T* w, const T* b, int N, int IC, int OC) {
  gemm<T>(false, true, N, OC, IC, T(1), x, IC, w, IC, T(0), out, OC);
  if (!b) return;
  for (int n = 0; n < N; ++n) {
    T* o = out + static_cast<std::size_t>(n) * OC;
#pragma omp simd
    for (int j = 0; j < OC; ++j) o[j] += b[j];
  }
}

template <class T>
void matmul_backward_input(T* dx, const T* dout, const T* w, int N, int IC, int OC) {
  gemm<T>(false, false, N, IC, OC, T(1), dout, OC, w, IC, T(0), dx, IC);
}

template <class T>
void matmul_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, int N, int IC, int OC) {
  matmul_backward_input(dx, dout, w, N, IC, OC);
  matmul_backward_weight(dw, db, dout, x, N, IC, OC);
}

template <class T>
void matmul_backward_weight(T* dw, T* db, const T* dout, const T* x, int N, int IC, int OC) {
  gemm<T>(true, false, OC, IC, N, T(1), dout, OC, x, IC, T(1), dw, IC);
  if (!db) return;
  for (int n = 0; n < N; ++n) {
    const T* d = dout + static_cast<std::size_t>(n) * OC;
#pragma omp simd
    for (int j = 0; j < OC; ++j) db[j] += d[j];
  }
}

template <class T>
void attention_forward(T* out, T* att, const T* qkv, int B, int Tn, int C, int H, KvHeads kv) {
  const int hs = C / H, KV = kv.count, W = C + 2 * KV * hs;
  const T scale = T(1) / std::sqrt(static_cast<T>(hs));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const T* seq = qkv + static_cast<std::size_t>(b) * Tn * W;
      const T* q = seq + h * hs;
      const T* k = seq + C + kv.of(h) * hs;
      const T* v = k + KV * hs;
      T* a = att + (static_cast<std::size_t>(b) * H + h) * Tn * Tn;
      gemm<T>(false, true, Tn, Tn, hs, scale, q, W, k, W, T(0), a, Tn);  // scores = q k^T / sqrt(hs)
      for (int t = 0; t < Tn; ++t) {  // causal softmax over t2 <= t
        T* row = a + static_cast<std::size_t>(t) * Tn;
        softmax_inplace(row, t + 1);
        std::fill(row + t + 1, row + Tn, T(0));
      }
      gemm<T>(false, false, Tn, hs, Tn, T(1), a, Tn, v, W, T(0), out + static_cast<std::size_t>(b) * Tn * C + h * hs, C);
    }
}

template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, T* scratch, int B, int Tn, int C, int H, KvHeads kv) {
  const int hs = C / H, KV = kv.count, W = C + 2 * KV * hs;
  const T scale = T(1) / std::sqrt(static_cast<T>(hs));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const std::size_t so = static_cast<std::size_t>(b) * Tn * W, ko = C + static_cast<std::size_t>(kv.of(h)) * hs;
      const T* q = qkv + so + h * hs;
      const T* k = qkv + so + ko;
      const T* v = k + KV * hs;
      T* dq = dqkv + so + h * hs;
      T* dk = dqkv + so + ko;
      T* dv = dk + KV * hs;
      // The first query head reading a key/value head writes its gradients, the others add.
      const T first = h == 0 || kv.of(h) != kv.of(h - 1) ? T(0) : T(1);
      const T* a = att + (static_cast<std::size_t>(b) * H + h) * Tn * Tn;
      const T* dy = dout + static_cast<std::size_t>(b) * Tn * C + h * hs;
      T* da = scratch;
      gemm<T>(false, true, Tn, Tn, hs, T(1), dy, C, v, W, T(0), da, Tn);      // dP = dY V^T
      gemm<T>(true, false, Tn, hs, Tn, T(1), a, Tn, dy, C, first, dv, W);     // dV (+)= P^T dY
      for (int t = 0; t < Tn; ++t) {  // dS = P * (dP - sum(dP * P)), causal part only
        T* row = da + static_cast<std::size_t>(t) * Tn;
        const T* p = a + static_cast<std::size_t>(t) * Tn;
        T dot = 0;
        for (int u = 0; u <= t; ++u) dot += row[u] * p[u];
        for (int u = 0; u <= t; ++u) row[u] = p[u] * (row[u] - dot);
        for (int u = t + 1; u < Tn; ++u) row[u] = 0;
      }
      gemm<T>(false, false, Tn, hs, Tn, scale, da, Tn, k, W, T(0), dq, W);    // dQ = dS K / sqrt(hs)
      gemm<T>(true, false, Tn, hs, Tn, scale, da, Tn, q, W, first, dk, W);    // dK (+)= dS^T Q / sqrt(hs)
    }
}

template <class T>
void gelu_forward(T* out, const T* x, std::size_t n) {
  gelu_kernel(out, x, n);
}

template <class T>
void gelu_backward(T* dx, const T* x, const T* dout, std::size_t n) {
  gelu_grad_kernel(dx, x, dout, n);
}

template <class T>
void swiglu_forward(T* out, const T* x, int N, int F) {
  for (int n = 0; n < N; ++n) {
    const T* g = x + static_cast<std::size_t>(n) * 2 * F;
    const T* u = g + F;
    T* o = out + static_cast<std::size_t>(n) * F;
    for (int i = 0; i < F; ++i) o[i] = g[i] / (T(1) + std::exp(-g[i])) * u[i];
  }
}

// d/dg silu(g) = sigma(g) (1 + g (1 - sigma(g))).
template <class T>
void swiglu_backward(T* dx, const T* x, const T* dout, int N, int F) {
  for (int n = 0; n < N; ++n) {
    const T* g = x + static_cast<std::size_t>(n) * 2 * F;
    const T* u = g + F;
    const T* d = dout + static_cast<std::size_t>(n) * F;
    T* dg = dx + static_cast<std::size_t>(n) * 2 * F;
    T* du = dg + F;
    for (int i = 0; i < F; ++i) {
      const T sig = T(1) / (T(1) + std::exp(-g[i]));
      du[i] = d[i] * g[i] * sig;
      dg[i] = d[i] * u[i] * sig * (T(1) + g[i] * (T(1) - sig));
    }
  }
}

template <class T>
void residual_forward(T* out, const T* a, const T* b, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <class T>
double head_forward(T* probs, const T* x, const T* wte, const int* targets, int N, int C, int V) {
  gemm<T>(false, true, N, V, C, T(1), x, C, wte, C, T(0), probs, V);
  double loss = 0;
  for (int n = 0; n < N; ++n) {
    T* row = probs + static_cast<std::size_t>(n) * V;
    softmax_inplace(row, V);
    loss -= std::log(static_cast<double>(row[targets[n]]));
  }
  return loss / N;
}

template <class T>
void head_backward(T* dx, T* dwte, T* probs, const T* x, const T* wte, const int* targets, T dloss, int N, int C, int V, int v0) {
  const T s = dloss / static_cast<T>(N);
  for (int n = 0; n < N; ++n) {
    T* row = probs + static_cast<std::size_t>(n) * V;
    if (const int v = targets[n] - v0; v >= 0 && v < V) row[v] -= T(1);
#pragma omp simd
    for (int v = 0; v < V; ++v) row[v] *= s;
  }
  gemm<T>(false, false, N, C, V, T(1), probs, V, wte, C, T(0), dx, C);
  gemm<T>(true, false, V, C, N, T(1), probs, V, x, C, T(1), dwte, C);
}

template <class T>
void vocab_max(T* max, const T* logits, int N, int V) {
  for (int n = 0; n < N; ++n) {
    const T* row = logits + static_cast<std::size_t>(n) * V;
    max[n] = *std::max_element(row, row + V);
  }
}

template <class T>
void vocab_exp_sums(T* logits, T* sums, const T* maxima, int G, const int* targets, int N, int V, int v0) {
  for (int n = 0; n < N; ++n) {
    T m = maxima[n];
    for (int g = 1; g < G; ++g) m = std::max(m, maxima[static_cast<std::size_t>(g) * N + n]);
    T* row = logits + static_cast<std::size_t>(n) * V;
    const int v = targets[n] - v0;
    sums[N + n] = v >= 0 && v < V ? row[v] - m : T(0);
    T s = 0;
    for (int i = 0; i < V; ++i) {
      row[i] = std::exp(row[i] - m);
      s += row[i];
    }
    sums[n] = s;
  }
}

template <class T>
double vocab_softmax_loss(T* probs, const T* sums, int N, int V) {
  double loss = 0;
  for (int n = 0; n < N; ++n) {
    T* row = probs + static_cast<std::size_t>(n) * V;
    const T inv = T(1) / sums[n];
    for (int i = 0; i < V; ++i) row[i] *= inv;
    loss += std::log(static_cast<double>(sums[n])) - static_cast<double>(sums[N + n]);
  }
  return loss / N;
}

#define TZ_INSTANTIATE(T)                                                                                         \
  template void encoder_forward<T>(T*, const int*, const T*, const T*, int, int, int, int, int);                 \
  template void encoder_backward<T>(T*, T*, const T*, const int*, int, int, int, int, int);                      \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int, int);                        \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int, int);   \
  template void matmul_forward<T>(T*, const T*, const T*, const T*, int, int, int);                              \
  template void matmul_backward<T>(T*, T*, T*, const T*, const T*, const T*, int, int, int);                     \
  template void matmul_backward_input<T>(T*, const T*, const T*, int, int, int);                                 \
  template void matmul_backward_weight<T>(T*, T*, const T*, const T*, int, int, int);                            \
  template void rmsnorm_forward<T>(T*, T*, const T*, const T*, int, int, T);                                    \
  template void rmsnorm_backward<T>(T*, T*, const T*, const T*, const T*, const T*, int, int);                   \
  template void rope_forward<T>(T*, const T*, const T*, int, int, int, int, int);                                \
  template void rope_backward<T>(T*, const T*, const T*, int, int, int, int, int);                               \
  template void attention_forward<T>(T*, T*, const T*, int, int, int, int, KvHeads);                            \
  template void attention_backward<T>(T*, const T*, const T*, const T*, T*, int, int, int, int, KvHeads);        \
  template void swiglu_forward<T>(T*, const T*, int, int);                                                       \
  template void swiglu_backward<T>(T*, const T*, const T*, int, int);                                            \
  template void gelu_forward<T>(T*, const T*, std::size_t);                                                      \
  template void gelu_backward<T>(T*, const T*, const T*, std::size_t);                                           \
  template void residual_forward<T>(T*, const T*, const T*, std::size_t);                                        \
  template double head_forward<T>(T*, const T*, const T*, const int*, int, int, int);                            \
  template void head_backward<T>(T*, T*, T*, const T*, const T*, const int*, T, int, int, int, int);            \
  template void vocab_max<T>(T*, const T*, int, int);                                                            \
  template void vocab_exp_sums<T>(T*, T*, const T*, int, const int*, int, int, int);                             \
  template double vocab_softmax_loss<T>(T*, const T*, int, int);
TZ_INSTANTIATE(float)
TZ_INSTANTIATE(double)
#undef TZ_INSTANTIATE

}  // namespace tierzero::ops
