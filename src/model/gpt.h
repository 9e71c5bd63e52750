// A decoder-only transformer — GPT-2 (learned position embeddings,
// pre-LayerNorm blocks, causal multi-head attention, tanh-GELU MLP of 4C,
// final LayerNorm, LM head tied to the token embedding) or the Llama family
// (RMSNorm, RoPE, grouped-query attention, SwiGLU, biases as configured,
// tied or untied head), as its GptConfig says — whose forward and backward
// passes run one parameter unit at a time (tierzero/gpt_config.h), so a
// caller can fetch a unit's weights just before it is used and drop them
// right after. The head uses the embed unit's wte when tied, its own
// lm_head otherwise (head_forward is given both units either way).
//
// Call order for one micro-batch: embed_forward, block_forward(0 .. L-1),
// head_forward, then head_backward, block_backward(L-1 .. 0), embed_backward.
// Backward functions add into the gradient units they are given.
// The model owns its activation buffers (allocated once, for `batch` x
// `seq_len`); with `recompute`, blocks keep only their input and recompute
// the rest during backward. Not thread-safe; one instance per rank.
//
// Tensor parallelism (a layout of one member's slices: tierzero/gpt_config.h's
// TpShard): the block runs its member's query heads and MLP columns and
// calls its group's collectives (TpGroup) where Megatron-LM's layers
// communicate (Shoeybi et al. 2019, section 3, the f and g operators): the
// group's sum of the outputs of the two row-parallel projections in forward
// (the replicated bias added by member 0 only, so once), and of the
// gradients of the two column-parallel projections' inputs in backward.
// Every member then holds the same residuals and norms, which run whole;
// the members must call the same passes in the same order.
// When the group does not divide the key/value heads (tierzero/gpt_config.h:
// tp_kv_heads), the members whose query heads read a head each hold its rows
// whole and compute part of their gradient (from their own query heads); a
// group sum per block and micro-batch gives each of them the whole gradient.
//
// The vocabulary is split too (TpSplit::vocab; Megatron's vocabulary-parallel
// embedding and cross-entropy): the member looks up the rows of the batch
// in its wte rows (zero for another member's token; member 0 adds the
// positions) and the group sums the result; its head computes the logits
// of its vocabulary columns only ([B T, V_r]: no member holds the whole
// vocabulary's), and the loss comes from the group's collectives on the
// rows' statistics: the members' row maxima all-gathered (each takes their
// largest), the sums of exp and the targets' logits (from the member that
// holds the target) summed, so every member computes the same loss. In
// backward each member's softmax-minus-one-hot covers its columns, the head's
// input gradient is the group's sum of the members' partial ones, and each
// member adds into its own wte rows (a tied head's both uses).
//
// Sequence parallelism (TpGroup::sequence_parallel; Korthikanti et al.
// 2022, "Reducing Activation Recomputation in Large Transformer Models",
// section 4.2.2): between the parallel regions each member holds a 1/N
// slice of the [batch * seq_len, channels] stream — member r the rows
// [r B T / N, (r + 1) B T / N), rows being (sequence, position) pairs in
// order — and runs the norms and the residual adds on it. An all-gather of the norm's output replaces the f operator before
// each column-parallel region, a reduce-scatter the g operator's sum after
// each row-parallel one; in backward, an all-gather of the output's
// gradient before each row-parallel projection, an all-gather of the saved
// norm output again (only the slice is kept) before each column-parallel
// one, and a reduce-scatter of its input's gradient. The embedding's
// lookup is reduce-scattered in place of its sum; the final norm's output
// is gathered for the head, whose input gradient is reduce-scattered in
// place of its sum; the embedding's gradient is computed from the gathered
// gradient of the stream (so the positions' stays equal on every member).
// The norms' weight gradients, computed on a slice, are summed over the group
// once per block and micro-batch (and once for the final norm).
//
// `Ops` is where the layers run: HostOps (the CPU's model/ops.h, the
// default) or gpu::DeviceOps (gpu/gpu_ops.h, CUDA builds), whose
// arrays and pointers — parameters, gradients, tokens, targets — live in
// device memory. The same code drives both.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "tierzero/gpt_config.h"

namespace tierzero {

struct HostOps;  // src/model/host_ops.h

// The elements GptModel's activation and gradient buffers hold (its
// activation_bytes() / sizeof(T)), for a backend whose attention backward
// takes `attention_scratch` elements: the total of their size table
// (model/activation_sizes.h), from which the model allocates them. The
// simulator's memory model for tierzero's engine uses it
// (src/sim/memory_model.cc). `tp`: a tensor-parallel member's (its heads'
// and MLP columns' share); `sp`: with sequence parallelism (the stream's
// rows at 1/tp, and the buffers its collectives use).
std::size_t gpt_activation_elements(const GptConfig& c, int batch, int seq_len, bool recompute, std::size_t attention_scratch,
                                    int tp = 1, bool sp = false);

// A tensor-parallel group's collectives as the model calls them, on the
// model's memory, on every member alike (Communicator's all_reduce,
// all_gather and reduce_scatter over the group, in member order), and
// whether the model runs sequence parallelism between its parallel regions.
// start_sum, start_all_gather and start_reduce_scatter (optional) start the
// same collectives and return; finish waits for the one started, whose
// buffers stay untouched until then, and no other collective is called in
// between. In a column-parallel projection's backward the model starts the
// sum (or reduce-scatter) of the input's gradient and computes the weight's
// gradient meanwhile, and under sequence parallelism first starts the
// all-gather of the saved input (the weight gradient's operand) and
// computes the input's gradient meanwhile (Megatron-LM's overlaps:
// megatron/core/tensor_parallel/layers.py,
// LinearWithGradAccumulationAndAsyncCommunication); without them it calls
// the blocking ones.
template <class T>
struct TpGroup {
  std::function<void(T* buf, std::size_t n)> sum;  // in place
  // recv[size * n] = the members' send[n], member by member.
  std::function<void(const T* send, T* recv, std::size_t n)> all_gather;
  // recv[n] = the members' sum of their send[rank * n, (rank + 1) * n).
  std::function<void(const T* send, T* recv, std::size_t n)> reduce_scatter;
  bool sequence_parallel = false;
  std::function<void(T* buf, std::size_t n)> start_sum;
  std::function<void(const T* send, T* recv, std::size_t n)> start_all_gather;
  std::function<void(const T* send, T* recv, std::size_t n)> start_reduce_scatter;
  std::function<void()> finish;
};

template <class T, class Ops = HostOps>
class GptModel {
 public:
  // `group` is needed (ConfigError without its sum and all-gather) when the
  // layout is a tensor-parallel member's; with sequence parallelism (ConfigError at tp 1,
  // or when tp does not divide seq_len) its all_gather and reduce_scatter too.
  GptModel(const GptLayout& layout, int batch, int seq_len, bool recompute = false, TpGroup<T> group = {});
  ~GptModel();
  GptModel(const GptModel&) = delete;
  GptModel& operator=(const GptModel&) = delete;

  const GptLayout& layout() const { return layout_; }
  int batch() const { return batch_; }
  int seq_len() const { return seq_len_; }

  // tokens, targets: [batch, seq_len] ids < vocab.
  void embed_forward(const T* embed, const int* tokens);
  void block_forward(int layer, const T* block);
  // Returns the mean cross-entropy loss.
  double head_forward(const T* embed, const T* head, const int* targets);
  // dloss scales the gradient (loss scaling, 1/accumulation steps).
  void head_backward(const T* embed, const T* head, T* dembed, T* dhead, const int* targets, T dloss);
  void block_backward(int layer, const T* block, T* dblock);
  void embed_backward(T* dembed, const int* tokens);

  // The whole pass over a flat arena (num_params elements each).
  double forward(const T* params, const int* tokens, const int* targets);
  double forward_backward(const T* params, T* grads, const int* tokens, const int* targets, T dloss = T(1));

  // Bytes of activation and gradient buffers held by the model.
  std::size_t activation_bytes() const;
  // After head_forward: softmax probabilities [batch * seq_len, local_vocab()] of the member's vocabulary columns,
  // [vocab_begin(), vocab_begin() + local_vocab()) of the layout (the whole vocabulary at tp 1).
  const T* probs() const;
  // Logits are not kept; this recomputes the member's columns of them into out [batch * seq_len, local_vocab()].
  void logits(const T* embed, const T* head, T* out) const;

 private:
  struct Buffers;
  const GptLayout& layout_;
  int batch_, seq_len_;
  bool recompute_;
  TpGroup<T> group_;
  bool sp_;            // sequence parallelism
  int rows_;           // the stream's rows this member holds (member r's [r rows_, (r + 1) rows_) of batch * seq_len)
  std::unique_ptr<Buffers> buf_;
  void block_forward_into(int layer, const T* block, int acts);
  // The column-parallel input: the member's rows of `slice` gathered into [N, C] (sequence parallel), or `slice`.
  const T* gather_rows(const T* slice);
  // The group's sum of a row-parallel [N, C] `partial`: its member's rows reduce-scattered into `out`
  // (sequence parallel; returns out), or summed in place (returns partial).
  T* sum_rows(T* partial, T* out);
  // The backward of a column-parallel projection (q|k|v or the MLP's first) whose input is a norm's output `saved`
  // (this member's rows under sequence parallelism): adds the weight's and bias's gradients into dw and db, and returns
  // the input's gradient summed over the group (sum_rows's). When the group can start its collectives: the sum started
  // before the weight's gradient and finished after it; under sequence parallelism, the gather of `saved` started
  // before the input's gradient and finished after it.
  const T* column_parallel_backward(T* dw, T* db, const T* dout, const T* saved, const T* w, int out_features);
  // LayerNorm or RMSNorm over `rows` x channels (b and mean unused for RMSNorm).
  void norm_forward(T* out, T* mean, T* rstd, const T* x, const T* w, const T* b, int rows) const;
  void norm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, const T* mean, const T* rstd, int rows) const;
  // Sequence parallel: the norms' weight gradients gathered in the `dnorm` scratch (weights, then biases),
  // summed over the group and added into `dw` (and `db`, LayerNorm only), `count` norms.
  void add_norm_grads(T* const* dw, T* const* db, int count);
  // Key/value heads shared by several members (tp_kv_owner): the gradients of the member's key rows `dk`
  // [KV D, C] and value rows after them (and biases `dbk` [2 KV D], or null), each holder's partial (the owner's
  // added to the rows' earlier sum, the others' alone: zero_kv_grads_of_others clears theirs first), summed over
  // the group in the `dkv` scratch (each head's place, zeros elsewhere): the same whole gradient on every holder.
  void zero_kv_grads_of_others(T* dk, T* dbk);
  void sum_kv_grads(T* dk, T* dbk);
  // Where wpe starts in the embed unit (after the member's wte rows).
  std::size_t wpe_offset() const;
  // The LM head's weight: wte (tied) or the head unit's lm_head.
  const T* head_weight(const T* embed, const T* head) const;
};

extern template class GptModel<float>;
extern template class GptModel<double>;

}  // namespace tierzero
