// The transformer layers (GPT-2's and the Llama family's) as
// forward/backward pairs of plain functions over row-major arrays,
// templated on the compute type (float for training, double for gradient
// checks). Shapes are written beside every argument: B batch, T sequence,
// C channels, H query heads, KV key/value heads, D = C / H head size, V
// vocabulary, F MLP hidden size, OC/IC out/in features. Backward functions
// *add* into parameter gradients (dw, db, dwte, dwpe) and into the norms'
// dx; every other input gradient (dx of matmul, gelu, swiglu and head,
// dqkv of attention) is *written*, and RoPE's backward works in place, so
// callers never clear scratch buffers.
#pragma once
#include <cstddef>

#include "model/gemm.h"
#include "tierzero/gpt_config.h"

namespace tierzero::ops {

// RoPE's angles for positions 0..Tn-1 of a head of size D: cos and sin
// [Tn, D/2] of t * inv_freq_i, inv_freq_i = theta^(-2i/D), Llama 3.1's
// frequency scaling applied when scaling.factor > 0 (tierzero/gpt_config.h).
void rope_tables(double* cos, double* sin, int Tn, int D, double theta, const RopeScaling& scaling);

// out[B,T,C] = wte[tokens[b,t] - v0, :] + wpe[t, :] (wpe null: no position
// embedding; dwpe null likewise), where wte[V,C] holds the vocabulary rows
// [v0, v0 + V): a token outside them reads a zero row (a vocabulary-parallel
// member's lookup; v0 = 0 and V the vocabulary: every token's). Backward
// adds a row's gradient into its token's dwte row, for the tokens in range.
template <class T>
void encoder_forward(T* out, const int* tokens, const T* wte, const T* wpe, int B, int Tn, int C, int v0, int V);
template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const int* tokens, int B, int Tn, int C, int v0, int V);

// out[N,C] = (x - mean) * rstd * w + b, eps 1e-5; saves mean[N], rstd[N].
template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* w, const T* b, int N, int C);
template <class T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, const T* mean, const T* rstd, int N,
                        int C);

// RMSNorm (Zhang and Sennrich 2019; Llama): out[N,C] = x * rstd * w with
// rstd = 1 / sqrt(mean(x^2) + eps); saves rstd[N].
template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* x, const T* w, int N, int C, T eps);
template <class T>
void rmsnorm_backward(T* dx, T* dw, const T* dout, const T* x, const T* w, const T* rstd, int N, int C);

// Rotary position embedding (Su et al. 2021) of the query and key heads of
// qkv[B,T,(H + 2 KV) D] in place, in Hugging Face's rotate-half layout:
// for i < D/2, (x_i, x_{i+D/2}) turns by the angle t * inv_freq_i, with
// cos[T, D/2] and sin[T, D/2] from rope_tables. The value heads are left alone.
template <class T>
void rope_forward(T* qkv, const T* cos, const T* sin, int B, int Tn, int H, int KV, int D);
// The transpose (a turn by -angle) of dqkv's query and key heads, in place.
template <class T>
void rope_backward(T* dqkv, const T* cos, const T* sin, int B, int Tn, int H, int KV, int D);

// out[N,OC] = x[N,IC] W[OC,IC]^T + b[OC] (b null: no bias; db null likewise)
template <class T>
void matmul_forward(T* out, const T* x, const T* w, const T* b, int N, int IC, int OC);
// Its backward in two parts, which a caller may separate (tensor parallelism
// sums dx over the group while the weight's gradient is computed):
// dx[N,IC] = dout[N,OC] W[OC,IC] (overwritten), then dw[OC,IC] += dout^T x
// and db[OC] += dout's column sums (db null: no bias).
template <class T>
void matmul_backward_input(T* dx, const T* dout, const T* w, int N, int IC, int OC);
template <class T>
void matmul_backward_weight(T* dw, T* db, const T* dout, const T* x, int N, int IC, int OC);
// Both, in that order.
template <class T>
void matmul_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, int N, int IC, int OC);

// Causal self-attention with kv.count key/value heads read by the H query
// heads (grouped-query attention; whole_kv_heads(H, H) is multi-head
// attention): qkv[B,T,(H + 2 KV) D] holds the H query heads, then the KV key
// heads, then the KV value heads, D columns each (KV = H: q | k | v of 3C);
// query head h reads key/value head kv.of(h) (h / (H / KV) for the whole
// model's). out[B,T,C], att[B,H,T,T] softmax probabilities (saved).
template <class T>
void attention_forward(T* out, T* att, const T* qkv, int B, int Tn, int C, int H, KvHeads kv);
// scratch: attention_scratch(Tn, H) elements. Writes dqkv.
constexpr std::size_t attention_scratch(int Tn, int /*H*/) { return static_cast<std::size_t>(Tn) * Tn; }
template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, T* scratch, int B, int Tn, int C, int H, KvHeads kv);

// GELU, tanh approximation (GPT-2; PyTorch's approximate='tanh').
template <class T>
void gelu_forward(T* out, const T* x, std::size_t n);
template <class T>
void gelu_backward(T* dx, const T* x, const T* dout, std::size_t n);

// SwiGLU (Shazeer 2020; Llama's MLP): x[N,2F] holds the gate projection
// (columns 0..F) then the up projection; out[N,F] = silu(gate) * up.
template <class T>
void swiglu_forward(T* out, const T* x, int N, int F);
template <class T>
void swiglu_backward(T* dx, const T* x, const T* dout, int N, int F);

// out[n] = a[n] + b[n]
template <class T>
void residual_forward(T* out, const T* a, const T* b, std::size_t n);

// LM head and mean cross-entropy over N = B*T positions: logits[N,V] =
// x[N,C] wte[V,C]^T (wte: the tied embedding or the untied lm_head),
// probs = softmax(logits) (overwrites logits).
// Returns the mean loss.
template <class T>
double head_forward(T* probs, const T* x, const T* wte, const int* targets, int N, int C, int V);
// dlogits = (probs - onehot) * dloss / N, computed in place in probs, where
// probs[N,V] are the vocabulary columns [v0, v0 + V) (a vocabulary-parallel
// member's: the one-hot of a target outside them is zero there).
template <class T>
void head_backward(T* dx, T* dwte, T* probs, const T* x, const T* wte, const int* targets, T dloss, int N, int C, int V, int v0 = 0);

// Vocabulary-parallel cross-entropy (Megatron-LM's: Shoeybi et al. 2019,
// section 3), in three steps around the group's collectives, on a member's
// logits[N,V] of the vocabulary columns [v0, v0 + V):
//   vocab_max: max[n] = the row's largest logit (gathered from every member);
//   vocab_exp_sums: with m[n] the largest of the G members' maxima[g N + n],
//     logits = exp(logits - m) in place, sums[n] = the row's sum and
//     sums[N + n] = the target's logit - m when the member holds the
//     target, else 0 (summed over the group);
//   vocab_softmax_loss: with the group's sums, probs = logits / sums[n] in
//     place; returns the mean loss, the mean of log sums[n] - sums[N + n].
template <class T>
void vocab_max(T* max, const T* logits, int N, int V);
template <class T>
void vocab_exp_sums(T* logits, T* sums, const T* maxima, int G, const int* targets, int N, int V, int v0);
template <class T>
double vocab_softmax_loss(T* probs, const T* sums, int N, int V);

}  // namespace tierzero::ops
