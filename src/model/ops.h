// The GPT layers as forward/backward pairs of plain functions over
// row-major arrays, templated on the compute type (float for training,
// double for gradient checks). Shapes are written beside every argument:
// B batch, T sequence, C channels, H heads, V vocabulary, OC/IC out/in
// features. Backward functions *add* into parameter gradients (dw, db,
// dwte, dwpe) and into layernorm_backward's dx; every other input gradient
// (dx of matmul, gelu and head, dqkv of attention) is *written*, so callers
// never clear scratch buffers.
#pragma once
#include <cstddef>

namespace tierzero::ops {

// C[M,N] = alpha * op(A) op(B) + beta * C through OpenBLAS (sgemm/dgemm).
template <class T>
void gemm(bool trans_a, bool trans_b, int m, int n, int k, T alpha, const T* a, int lda, const T* b, int ldb, T beta,
          T* c, int ldc);

// out[B,T,C] = wte[tokens[b,t], :] + wpe[t, :]
template <class T>
void encoder_forward(T* out, const int* tokens, const T* wte, const T* wpe, int B, int Tn, int C);
template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const int* tokens, int B, int Tn, int C);

// out[N,C] = (x - mean) * rstd * w + b, eps 1e-5; saves mean[N], rstd[N].
template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* w, const T* b, int N, int C);
template <class T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, const T* mean, const T* rstd, int N,
                        int C);

// out[N,OC] = x[N,IC] W[OC,IC]^T + b[OC]
template <class T>
void matmul_forward(T* out, const T* x, const T* w, const T* b, int N, int IC, int OC);
template <class T>
void matmul_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, int N, int IC, int OC);

// Causal multi-head self-attention. qkv[B,T,3C] (q | k | v, head h in
// columns h*C/H ..), out[B,T,C], att[B,H,T,T] softmax probabilities (saved).
template <class T>
void attention_forward(T* out, T* att, const T* qkv, int B, int Tn, int C, int H);
// scratch: attention_scratch(Tn, H) elements. Writes dqkv.
constexpr std::size_t attention_scratch(int Tn, int /*H*/) { return static_cast<std::size_t>(Tn) * Tn; }
template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, T* scratch, int B, int Tn, int C, int H);

// GELU, tanh approximation (GPT-2; PyTorch's approximate='tanh').
template <class T>
void gelu_forward(T* out, const T* x, std::size_t n);
template <class T>
void gelu_backward(T* dx, const T* x, const T* dout, std::size_t n);

// out[n] = a[n] + b[n]
template <class T>
void residual_forward(T* out, const T* a, const T* b, std::size_t n);

// Tied LM head and mean cross-entropy over N = B*T positions:
// logits[N,V] = x[N,C] wte[V,C]^T, probs = softmax(logits) (overwrites logits).
// Returns the mean loss.
template <class T>
double head_forward(T* probs, const T* x, const T* wte, const int* targets, int N, int C, int V);
// dlogits = (probs - onehot) * dloss / N, computed in place in probs.
template <class T>
void head_backward(T* dx, T* dwte, T* probs, const T* x, const T* wte, const int* targets, T dloss, int N, int C, int V);

}  // namespace tierzero::ops

namespace tierzero::ops {
// Threads OpenBLAS uses for GEMMs (the other layers run on the calling thread).
void set_blas_threads(int n);
}  // namespace tierzero::ops
