// GptModel's activation and gradient buffers, listed once (as llm.c's
// fill_in_activation_sizes lists its): each buffer's elements and how many
// copies of it the model holds. The model allocates from this table
// (model/gpt_impl.h), its activation_bytes() sums what it allocated, and
// gpt_activation_elements() (model/gpt.h), what the simulator's memory
// model counts for tierzero's engine, sums the table. Value type.
#pragma once
#include <array>
#include <cstddef>

#include "tierzero/gpt_config.h"

namespace tierzero {

// Shapes: N = B*T tokens, C channels, W = (H + 2 KV) D the fused
// query/key/value width, A = H D the attention's width, G = F for GELU and
// 2F for SwiGLU (H, KV and F a tensor-parallel member's), V the member's
// vocabulary rows (the most any member holds: ceil(vocab / tp)); R the
// stream's rows a member holds: N, or N / tp with sequence parallelism.
enum class ActBuffer : int {
  residual,                 // [R,C], L+1: the blocks' inputs, then the last block's output
  ln1, ln1_mean, ln1_rstd,  // per held block (L, or 1 when recomputing): [R,C], [R] (LayerNorm only), [R]
  qkv,                      // [N,W], query and key heads rotated with RoPE
  att,                      // [B,H,T,T]
  atty,                     // [N,A]
  res2,                     // [R,C] the residual after attention
  ln2, ln2_mean, ln2_rstd,  // [R,C], [R] (LayerNorm only), [R]
  fch, fch_act,             // [N,G] (SwiGLU: gate | up), [N,F] GELU(fch) or silu(gate) * up
  lnf, lnf_mean, lnf_rstd,  // the final norm: [N,C] (gathered), [R] (LayerNorm only), [R]
  probs,                    // [N,V]: the member's logits, then its probabilities
  rope_cos, rope_sin,       // [T, D/2] (RoPE only)
  // The backward's scratch, reused by every block: [R,C], [N,C], [N,A], [N,W], [N,G], [N,F], and the attention
  // backward's (the backend's attention_scratch).
  dres, dln, datty, dqkv, dfch, dfch_act, att_scratch,
  // Sequence parallelism's (empty without): the gathered [N,C] input or row-parallel partial sums, a
  // reduce-scattered [R,C] slice (and the final norm's output), the norms' weight gradients [4C].
  full, slice, dnorm,
  // Key/value heads shared by tensor-parallel members (empty otherwise): every head's key and value rows'
  // gradients (and biases'), summed over the group once per block and micro-batch (tp_kv_grad_elements).
  dkv,
  // Tensor parallelism's (empty at tp 1): the vocabulary-parallel loss's row statistics, [(tp + 3) N]: the member's
  // maxima, the members' gathered, the sums of exp and the targets' logits.
  vocab,
};
inline constexpr int kNumActBuffers = static_cast<int>(ActBuffer::vocab) + 1;

struct ActivationSizes {
  std::array<std::size_t, kNumActBuffers> elements{};  // of one copy
  std::array<std::size_t, kNumActBuffers> copies{};
  std::size_t operator[](ActBuffer b) const { return elements[static_cast<int>(b)]; }
  std::size_t copies_of(ActBuffer b) const { return copies[static_cast<int>(b)]; }
  std::size_t total() const;  // elements of every copy of every buffer
};

// The table for `batch` sequences of `seq_len`, every block's buffers held
// or (recompute) one block's, a backend whose attention backward takes
// `attention_scratch` elements, on a member of a tensor-parallel group of `tp`,
// with sequence parallelism (`sp`) or without.
ActivationSizes activation_sizes(const GptConfig& c, int batch, int seq_len, bool recompute, std::size_t attention_scratch, int tp = 1,
                                 bool sp = false);

}  // namespace tierzero
