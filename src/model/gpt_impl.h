// GptModel's definitions, for the translation units that instantiate it
// with an ops backend (src/model/gpt.cc: HostOps; src/gpu/gpu_model.cc:
// gpu::DeviceOps). An ops backend provides Array<T> (resize, data, size),
// zero(Array), the layer functions of model/ops.h and attention_scratch.
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "model/activation_sizes.h"
#include "model/gpt.h"
#include "tierzero/error.h"
#include "model/ops.h"

namespace tierzero {

// Activation and gradient buffers, each named by its entry of the size
// table (model/activation_sizes.h), which gives its shape.
template <class T, class Ops>
struct GptModel<T, Ops>::Buffers {
  using Array = typename Ops::template Array<T>;
  struct Block {
    Array ln1, ln1_mean, ln1_rstd, qkv, att, atty, res2, ln2, ln2_mean, ln2_rstd, fch, fch_act;
  };
  std::vector<Array> residual;  // L+1
  std::vector<Block> blocks;    // L, or 1 when recomputing
  Array lnf, lnf_mean, lnf_rstd, probs;
  Array rope_cos, rope_sin;
  // Backward scratch, reused by every block.
  Array dres, dln, datty, dqkv, dfch, dfch_act, att_scratch;
  // Sequence parallel only (empty otherwise).
  Array full, slice, dnorm;
  // Shared key/value heads only (empty otherwise).
  Array dkv;
  // Tensor parallel only: the vocabulary-parallel loss's row statistics.
  Array vocab;

  // f(array, its entry) for every array (of `b`, a Buffers or a const one).
  template <class Self, class F>
  static void each(Self& b, F&& f) {
    using B = ActBuffer;
    for (auto& r : b.residual) f(r, B::residual);
    for (auto& k : b.blocks) {
      f(k.ln1, B::ln1), f(k.ln1_mean, B::ln1_mean), f(k.ln1_rstd, B::ln1_rstd), f(k.qkv, B::qkv), f(k.att, B::att), f(k.atty, B::atty);
      f(k.res2, B::res2), f(k.ln2, B::ln2), f(k.ln2_mean, B::ln2_mean), f(k.ln2_rstd, B::ln2_rstd), f(k.fch, B::fch), f(k.fch_act, B::fch_act);
    }
    f(b.lnf, B::lnf), f(b.lnf_mean, B::lnf_mean), f(b.lnf_rstd, B::lnf_rstd), f(b.probs, B::probs);
    f(b.rope_cos, B::rope_cos), f(b.rope_sin, B::rope_sin);
    f(b.dres, B::dres), f(b.dln, B::dln), f(b.datty, B::datty), f(b.dqkv, B::dqkv), f(b.dfch, B::dfch), f(b.dfch_act, B::dfch_act);
    f(b.att_scratch, B::att_scratch);
    f(b.full, B::full), f(b.slice, B::slice), f(b.dnorm, B::dnorm);
    f(b.dkv, B::dkv);
    f(b.vocab, B::vocab);
  }
};

template <class T, class Ops>
GptModel<T, Ops>::GptModel(const GptLayout& layout, int batch, int seq_len, bool recompute, TpGroup<T> group)
    : layout_(layout),
      batch_(batch),
      seq_len_(seq_len),
      recompute_(recompute),
      group_(std::move(group)),
      sp_(group_.sequence_parallel),
      rows_(batch * seq_len / (sp_ ? layout.tp().size : 1)),
      buf_(std::make_unique<Buffers>()) {
  const int tp = layout.tp().size;
  TZ_CHECK(tp == 1 || (group_.sum && group_.all_gather), ConfigError, "a tensor-parallel model needs its group's sum and all-gather");
  TZ_CHECK(!sp_ || tp > 1, ConfigError, "sequence parallelism needs tp > 1 (tp = 1)");
  TZ_CHECK(!sp_ || seq_len % tp == 0, ConfigError,
           "sequence parallelism: tp = " + std::to_string(tp) + " does not divide the sequence length " + std::to_string(seq_len));
  TZ_CHECK(!sp_ || (group_.all_gather && group_.reduce_scatter), ConfigError, "a sequence-parallel model needs its group's all-gather and reduce-scatter");
  const GptConfig& c = layout.config();
  const ActivationSizes sizes =
      activation_sizes(c, batch, seq_len, recompute, Ops::attention_scratch(seq_len, layout.local_heads()), tp, sp_);
  auto& b = *buf_;
  b.residual.resize(sizes.copies_of(ActBuffer::residual));
  b.blocks.resize(sizes.copies_of(ActBuffer::ln1));
  Buffers::each(b, [&](auto& a, ActBuffer k) { a.resize(sizes[k]); });
  if (c.positions == Positions::rope) {
    const std::size_t n = sizes[ActBuffer::rope_cos];
    std::vector<double> cos(n), sin(n);
    ops::rope_tables(cos.data(), sin.data(), seq_len, c.head_size(), c.rope_theta, c.rope_scaling);
    const std::vector<T> tc(cos.begin(), cos.end()), ts(sin.begin(), sin.end());
    Ops::upload(b.rope_cos, tc.data(), n);
    Ops::upload(b.rope_sin, ts.data(), n);
  }
}

template <class T, class Ops>
GptModel<T, Ops>::~GptModel() = default;

template <class T, class Ops>
const T* GptModel<T, Ops>::gather_rows(const T* slice) {
  if (!sp_) return slice;
  group_.all_gather(slice, buf_->full.data(), static_cast<std::size_t>(rows_) * layout_.config().channels);
  return buf_->full.data();
}

template <class T, class Ops>
T* GptModel<T, Ops>::sum_rows(T* partial, T* out) {
  const std::size_t C = layout_.config().channels;
  if (sp_) {
    group_.reduce_scatter(partial, out, rows_ * C);
    return out;
  }
  if (layout_.tp().size > 1) group_.sum(partial, static_cast<std::size_t>(batch_) * seq_len_ * C);
  return partial;
}

template <class T, class Ops>
const T* GptModel<T, Ops>::column_parallel_backward(T* dw, T* db, const T* dout, const T* saved, const T* w, int out_features) {
  const int N = batch_ * seq_len_, C = layout_.config().channels;
  T* dx = buf_->dln.data();
  const bool overlap = layout_.tp().size > 1 && (sp_ ? group_.start_all_gather && group_.start_reduce_scatter : bool(group_.start_sum));
  if (!overlap) {
    Ops::matmul_backward(dx, dw, db, dout, gather_rows(saved), w, N, C, out_features);
    return sum_rows(dx, buf_->slice.data());
  }
  // One collective of the group at a time: the gather of the weight gradient's operand under the input's gradient,
  // then the input gradient's sum under the weight's.
  const std::size_t slice = static_cast<std::size_t>(rows_) * C;
  if (sp_) group_.start_all_gather(saved, buf_->full.data(), slice);
  Ops::matmul_backward_input(dx, dout, w, N, C, out_features);
  group_.finish();
  if (sp_) group_.start_reduce_scatter(dx, buf_->slice.data(), slice);
  else group_.start_sum(dx, static_cast<std::size_t>(N) * C);
  Ops::matmul_backward_weight(dw, db, dout, sp_ ? buf_->full.data() : saved, N, C, out_features);
  group_.finish();
  return sp_ ? buf_->slice.data() : dx;
}

template <class T, class Ops>
void GptModel<T, Ops>::norm_forward(T* out, T* mean, T* rstd, const T* x, const T* w, const T* b, int rows) const {
  const GptConfig& c = layout_.config();
  if (c.norm == Norm::layernorm) Ops::layernorm_forward(out, mean, rstd, x, w, b, rows, c.channels);
  else Ops::rmsnorm_forward(out, rstd, x, w, rows, c.channels, static_cast<T>(c.norm_eps));
}

template <class T, class Ops>
void GptModel<T, Ops>::norm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, const T* mean, const T* rstd,
                                     int rows) const {
  const GptConfig& c = layout_.config();
  if (c.norm == Norm::layernorm) Ops::layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, rows, c.channels);
  else Ops::rmsnorm_backward(dx, dw, dout, x, w, rstd, rows, c.channels);
}

template <class T, class Ops>
void GptModel<T, Ops>::add_norm_grads(T* const* dw, T* const* db, int count) {
  const std::size_t C = layout_.config().channels;
  const bool biases = layout_.config().norm == Norm::layernorm;
  T* g = buf_->dnorm.data();
  group_.sum(g, (biases ? 2 : 1) * count * C);
  for (int i = 0; i < count; ++i) {
    Ops::residual_forward(dw[i], dw[i], g + i * C, C);
    if (biases) Ops::residual_forward(db[i], db[i], g + (count + i) * C, C);
  }
}

template <class T, class Ops>
void GptModel<T, Ops>::zero_kv_grads_of_others(T* dk, T* dbk) {
  const GptConfig& c = layout_.config();
  const TpKvHeads kv = layout_.kv_heads();
  const std::size_t D = static_cast<std::size_t>(c.head_size()), C = static_cast<std::size_t>(c.channels), KV = kv.heads.count;
  for (std::size_t j = 0; j < KV; ++j) {
    const int owner = tp_kv_owner(c, layout_.tp().size, kv.first + static_cast<int>(j));
    if (owner < 0 || owner == layout_.tp().rank) continue;
    Ops::zero(dk + j * D * C, D * C), Ops::zero(dk + (KV + j) * D * C, D * C);  // its key rows, its value rows
    if (dbk) Ops::zero(dbk + j * D, D), Ops::zero(dbk + (KV + j) * D, D);
  }
}

template <class T, class Ops>
void GptModel<T, Ops>::sum_kv_grads(T* dk, T* dbk) {
  const GptConfig& c = layout_.config();
  const TpKvHeads kv = layout_.kv_heads();
  const std::size_t D = static_cast<std::size_t>(c.head_size()), C = static_cast<std::size_t>(c.channels), KV = kv.heads.count;
  T* g = buf_->dkv.data();
  // Each head's key then value weight rows at its place among every head's; the biases after all the weights.
  T* bias = g + static_cast<std::size_t>(c.kv()) * 2 * D * C;
  auto slots = [&](std::size_t j, auto&& move) {
    const std::size_t head = static_cast<std::size_t>(kv.first) + j;
    move(g + head * 2 * D * C, dk + j * D * C, D * C);
    move(g + head * 2 * D * C + D * C, dk + (KV + j) * D * C, D * C);
    if (dbk) move(bias + head * 2 * D, dbk + j * D, D), move(bias + head * 2 * D + D, dbk + (KV + j) * D, D);
  };
  Ops::zero(buf_->dkv);
  for (std::size_t j = 0; j < KV; ++j) slots(j, [](T* slot, T* mine, std::size_t n) { Ops::residual_forward(slot, slot, mine, n); });
  group_.sum(g, buf_->dkv.size());
  for (std::size_t j = 0; j < KV; ++j)
    slots(j, [](T* slot, T* mine, std::size_t n) { Ops::zero(mine, n), Ops::residual_forward(mine, mine, slot, n); });
}

template <class T, class Ops>
std::size_t GptModel<T, Ops>::wpe_offset() const {
  return static_cast<std::size_t>(layout_.local_vocab()) * layout_.config().channels;
}

// Vocabulary parallel: every row of the batch looked up in the member's vocabulary rows (zero for a token outside
// them; the positions added by member 0 only), then the group's sum (reduce-scattered to the member's rows, sequence
// parallel).
template <class T, class Ops>
void GptModel<T, Ops>::embed_forward(const T* embed, const int* tokens) {
  const GptConfig& c = layout_.config();
  const T* wpe = c.positions == Positions::learned && layout_.tp().rank == 0 ? embed + wpe_offset() : nullptr;
  T* lookup = sp_ ? buf_->full.data() : buf_->residual[0].data();
  Ops::encoder_forward(lookup, tokens, embed, wpe, batch_, seq_len_, c.channels, layout_.vocab_begin(), layout_.local_vocab());
  sum_rows(lookup, buf_->residual[0].data());
}

template <class T, class Ops>
void GptModel<T, Ops>::block_forward_into(int layer, const T* p, int acts) {
  const GptConfig& c = layout_.config();
  const BlockOffsets& o = layout_.block();
  const int N = batch_ * seq_len_, C = c.channels, H = layout_.local_heads(), F = layout_.local_ffn(), KV = layout_.local_kv();
  const int D = c.head_size(), A = H * D, W = A + 2 * KV * D;
  const bool swiglu = c.mlp == Mlp::swiglu;
  const bool adds_bias = layout_.tp().rank == 0;  // of the row-parallel projections, summed over the group after
  auto& k = buf_->blocks[acts];
  const T* x = buf_->residual[layer].data();
  T* out = buf_->residual[layer + 1].data();
  // Row-parallel outputs: partial sums in the gathered buffer (sequence parallel), else in place.
  T* partial1 = sp_ ? buf_->full.data() : k.res2.data();
  T* partial2 = sp_ ? buf_->full.data() : out;
  norm_forward(k.ln1.data(), k.ln1_mean.data(), k.ln1_rstd.data(), x, p + o.ln1_w, tensor_at(p, o.ln1_b), rows_);
  Ops::matmul_forward(k.qkv.data(), gather_rows(k.ln1.data()), p + o.attn_w, tensor_at(p, o.attn_b), N, C, W);
  if (c.positions == Positions::rope)
    Ops::rope_forward(k.qkv.data(), buf_->rope_cos.data(), buf_->rope_sin.data(), batch_, seq_len_, H, KV, D);
  Ops::attention_forward(k.atty.data(), k.att.data(), k.qkv.data(), batch_, seq_len_, A, H, layout_.kv_heads().heads);
  Ops::matmul_forward(partial1, k.atty.data(), p + o.proj_w, adds_bias ? tensor_at(p, o.proj_b) : nullptr, N, A, C);
  sum_rows(partial1, k.res2.data());
  Ops::residual_forward(k.res2.data(), k.res2.data(), x, k.res2.size());
  norm_forward(k.ln2.data(), k.ln2_mean.data(), k.ln2_rstd.data(), k.res2.data(), p + o.ln2_w, tensor_at(p, o.ln2_b), rows_);
  Ops::matmul_forward(k.fch.data(), gather_rows(k.ln2.data()), p + o.fc_w, tensor_at(p, o.fc_b), N, C, swiglu ? 2 * F : F);
  if (swiglu) Ops::swiglu_forward(k.fch_act.data(), k.fch.data(), N, F);
  else Ops::gelu_forward(k.fch_act.data(), k.fch.data(), k.fch.size());
  Ops::matmul_forward(partial2, k.fch_act.data(), p + o.fcproj_w, adds_bias ? tensor_at(p, o.fcproj_b) : nullptr, N, F, C);
  sum_rows(partial2, out);
  Ops::residual_forward(out, out, k.res2.data(), k.res2.size());
}

template <class T, class Ops>
void GptModel<T, Ops>::block_forward(int layer, const T* block) {
  block_forward_into(layer, block, recompute_ ? 0 : layer);
}

template <class T, class Ops>
const T* GptModel<T, Ops>::head_weight(const T* embed, const T* head) const {
  const std::size_t lm = layout_.head().lm_head;
  return lm == kAbsent ? embed : head + lm;
}

template <class T, class Ops>
double GptModel<T, Ops>::head_forward(const T* embed, const T* head, const int* targets) {
  const GptConfig& c = layout_.config();
  const HeadOffsets& o = layout_.head();
  const int N = batch_ * seq_len_, C = c.channels;
  auto& b = *buf_;
  // Sequence parallel: the final norm on the member's rows, gathered for the head.
  T* lnf = sp_ ? b.slice.data() : b.lnf.data();
  norm_forward(lnf, b.lnf_mean.data(), b.lnf_rstd.data(), b.residual[c.layers].data(), head + o.lnf_w, tensor_at(head, o.lnf_b), rows_);
  if (sp_) group_.all_gather(lnf, b.lnf.data(), b.slice.size());
  const int G = layout_.tp().size, V = layout_.local_vocab();
  if (G == 1) return Ops::head_forward(b.probs.data(), b.lnf.data(), head_weight(embed, head), targets, N, C, V);
  // Vocabulary parallel: the member's logits; the rows' maxima gathered (each member takes their largest), the sums
  // of exp and the targets' logits summed over the group, so every member computes the same loss.
  T *max = b.vocab.data(), *maxima = max + N, *sums = maxima + static_cast<std::size_t>(G) * N;
  Ops::matmul_forward(b.probs.data(), b.lnf.data(), head_weight(embed, head), static_cast<const T*>(nullptr), N, C, V);
  Ops::vocab_max(max, b.probs.data(), N, V);
  group_.all_gather(max, maxima, N);
  Ops::vocab_exp_sums(b.probs.data(), sums, maxima, G, targets, N, V, layout_.vocab_begin());
  group_.sum(sums, 2 * static_cast<std::size_t>(N));
  return Ops::vocab_softmax_loss(b.probs.data(), sums, N, V);
}

template <class T, class Ops>
void GptModel<T, Ops>::head_backward(const T* embed, const T* head, T* dembed, T* dhead, const int* targets, T dloss) {
  const GptConfig& c = layout_.config();
  const HeadOffsets& o = layout_.head();
  const int N = batch_ * seq_len_, C = c.channels;
  auto& b = *buf_;
  T* dweight = o.lm_head == kAbsent ? dembed : dhead + o.lm_head;
  Ops::head_backward(b.dln.data(), dweight, b.probs.data(), b.lnf.data(), head_weight(embed, head), targets, dloss, N, C,
                     layout_.local_vocab(), layout_.vocab_begin());
  Ops::zero(b.dres);
  // Vocabulary parallel: the head's input gradient is the group's sum of the members' (reduce-scattered to the
  // member's rows, which go through its norm, sequence parallel).
  const T* dlnf = sum_rows(b.dln.data(), b.slice.data());
  T* dw = sp_ ? b.dnorm.data() : dhead + o.lnf_w;
  T* db = sp_ ? b.dnorm.data() + C : tensor_at(dhead, o.lnf_b);
  if (sp_) Ops::zero(b.dnorm);
  norm_backward(b.dres.data(), dw, db, dlnf, b.residual[c.layers].data(), head + o.lnf_w, b.lnf_mean.data(), b.lnf_rstd.data(), rows_);
  if (sp_) {
    T* const w[] = {dhead + o.lnf_w};
    T* const bias[] = {tensor_at(dhead, o.lnf_b)};
    add_norm_grads(w, bias, 1);
  }
}

template <class T, class Ops>
void GptModel<T, Ops>::block_backward(int layer, const T* p, T* dp) {
  const GptConfig& c = layout_.config();
  const BlockOffsets& o = layout_.block();
  const int N = batch_ * seq_len_, C = c.channels, H = layout_.local_heads(), F = layout_.local_ffn(), KV = layout_.local_kv();
  const int D = c.head_size(), A = H * D, W = A + 2 * KV * D;
  const bool swiglu = c.mlp == Mlp::swiglu;
  auto& b = *buf_;
  if (recompute_) block_forward_into(layer, p, 0);
  auto& k = b.blocks[recompute_ ? 0 : layer];
  const T* x = b.residual[layer].data();
  // Sequence parallel: the norms' weight gradients of this micro-batch in the dnorm scratch (weights, then biases), summed after.
  T* dln1_w = sp_ ? b.dnorm.data() : dp + o.ln1_w;
  T* dln2_w = sp_ ? b.dnorm.data() + C : dp + o.ln2_w;
  T* dln1_b = sp_ ? b.dnorm.data() + 2 * C : tensor_at(dp, o.ln1_b);
  T* dln2_b = sp_ ? b.dnorm.data() + 3 * C : tensor_at(dp, o.ln2_b);
  if (sp_) Ops::zero(b.dnorm);
  // b.dres holds dL/d(block output); on return it holds dL/d(block input).
  Ops::matmul_backward(b.dfch_act.data(), dp + o.fcproj_w, tensor_at(dp, o.fcproj_b), gather_rows(b.dres.data()), k.fch_act.data(),
                       p + o.fcproj_w, N, F, C);
  if (swiglu) Ops::swiglu_backward(b.dfch.data(), k.fch.data(), b.dfch_act.data(), N, F);
  else Ops::gelu_backward(b.dfch.data(), k.fch.data(), b.dfch_act.data(), b.dfch.size());
  const T* dln2 = column_parallel_backward(dp + o.fc_w, tensor_at(dp, o.fc_b), b.dfch.data(), k.ln2.data(), p + o.fc_w, swiglu ? 2 * F : F);
  norm_backward(b.dres.data(), dln2_w, dln2_b, dln2, k.res2.data(), p + o.ln2_w, k.ln2_mean.data(), k.ln2_rstd.data(), rows_);
  Ops::matmul_backward(b.datty.data(), dp + o.proj_w, tensor_at(dp, o.proj_b), gather_rows(b.dres.data()), k.atty.data(), p + o.proj_w, N,
                       A, C);
  Ops::attention_backward(b.dqkv.data(), b.datty.data(), k.qkv.data(), k.att.data(), b.att_scratch.data(), batch_, seq_len_, A, H,
                          layout_.kv_heads().heads);
  if (c.positions == Positions::rope)
    Ops::rope_backward(b.dqkv.data(), b.rope_cos.data(), b.rope_sin.data(), batch_, seq_len_, H, KV, D);
  // Shared key/value heads: the holders' partial gradients summed, the owner's adding to what the rows held.
  const bool shared = buf_->dkv.size() > 0;
  T* dk = dp + o.attn_w + static_cast<std::size_t>(A) * C;
  T* dbk = o.attn_b == kAbsent ? nullptr : dp + o.attn_b + A;
  if (shared) zero_kv_grads_of_others(dk, dbk);
  const T* dln1 = column_parallel_backward(dp + o.attn_w, tensor_at(dp, o.attn_b), b.dqkv.data(), k.ln1.data(), p + o.attn_w, W);
  if (shared) sum_kv_grads(dk, dbk);
  norm_backward(b.dres.data(), dln1_w, dln1_b, dln1, x, p + o.ln1_w, k.ln1_mean.data(), k.ln1_rstd.data(), rows_);
  if (sp_) {
    T* const w[] = {dp + o.ln1_w, dp + o.ln2_w};
    T* const bias[] = {tensor_at(dp, o.ln1_b), tensor_at(dp, o.ln2_b)};
    add_norm_grads(w, bias, 2);
  }
}

template <class T, class Ops>
void GptModel<T, Ops>::embed_backward(T* dembed, const int* tokens) {
  const GptConfig& c = layout_.config();
  T* dwpe = c.positions == Positions::learned ? dembed + wpe_offset() : nullptr;
  // The member's vocabulary rows' gradients and (sequence parallel: from the gathered gradient of the stream) the
  // replicated positions', equal on every member.
  Ops::encoder_backward(dembed, dwpe, gather_rows(buf_->dres.data()), tokens, batch_, seq_len_, c.channels, layout_.vocab_begin(),
                        layout_.local_vocab());
}

template <class T, class Ops>
double GptModel<T, Ops>::forward(const T* params, const int* tokens, const int* targets) {
  const auto& u = layout_.units();
  embed_forward(params + u[layout_.embed_unit()].offset, tokens);
  for (int l = 0; l < layout_.config().layers; ++l) block_forward(l, params + u[layout_.block_unit(l)].offset);
  return head_forward(params + u[layout_.embed_unit()].offset, params + u[layout_.head_unit()].offset, targets);
}

template <class T, class Ops>
double GptModel<T, Ops>::forward_backward(const T* params, T* grads, const int* tokens, const int* targets, T dloss) {
  const double loss = forward(params, tokens, targets);
  const auto& u = layout_.units();
  const std::size_t e = u[layout_.embed_unit()].offset, h = u[layout_.head_unit()].offset;
  head_backward(params + e, params + h, grads + e, grads + h, targets, dloss);
  for (int l = layout_.config().layers - 1; l >= 0; --l) {
    const std::size_t off = u[layout_.block_unit(l)].offset;
    block_backward(l, params + off, grads + off);
  }
  embed_backward(grads + e, tokens);
  return loss;
}

template <class T, class Ops>
std::size_t GptModel<T, Ops>::activation_bytes() const {
  std::size_t n = 0;
  Buffers::each(*buf_, [&](const auto& a, ActBuffer) { n += a.size(); });
  return n * sizeof(T);
}

template <class T, class Ops>
const T* GptModel<T, Ops>::probs() const {
  return buf_->probs.data();
}

template <class T, class Ops>
void GptModel<T, Ops>::logits(const T* embed, const T* head, T* out) const {
  const GptConfig& c = layout_.config();
  Ops::matmul_forward(out, buf_->lnf.data(), head_weight(embed, head), static_cast<const T*>(nullptr), batch_ * seq_len_, c.channels,
                      layout_.local_vocab());
}

}  // namespace tierzero
