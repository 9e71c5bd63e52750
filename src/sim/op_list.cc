#include "sim/op_list.h"

#include <cmath>

namespace tierzero {

namespace {
// Builds one block's (or the model's ends') forward operations and their
// backward counterparts. Memory-bound bytes are the minimum a kernel of
// that operation reads and writes, in the activation dtype (a): an
// engine's eager kernels move more (EngineProfile::elementwise_traffic);
// the norms and the rotary embedding as the model's code writes them where
// it lists them (tierzero/model_code.h).
class OpBuilder {
 public:
  OpBuilder(std::vector<Op>& out, double count, bool fp8) : out_(out), count_(count), fp8_(fp8) {}

  // A linear layer: forward C = X W (m tokens, k in, n out); backward the
  // input gradient (m x k from m x n by n x k) and the weight gradient (k x n
  // from k x m by m x n).
  void linear(const std::string& name, double m, double n, double k) {
    gemm(name, OpPass::forward, 1, m, n, k, fp8_);
    gemm(name + "_dgrad", OpPass::backward, 1, m, k, n, fp8_);
    gemm(name + "_wgrad", OpPass::backward, 1, k, n, m, fp8_);
  }
  void gemm(const std::string& name, OpPass pass, double batch, double m, double n, double k, bool fp8 = false) {
    Op o;
    o.kind = OpKind::gemm, o.pass = pass, o.name = name, o.count = count_ * batch, o.m = m, o.n = n, o.k = k, o.fp8 = fp8;
    push(o);
  }
  // What the last forward op keeps for its backward in each block, and its output's bytes (Op::saved_bytes).
  void keeps(double saved, double output = 0) { out_[last_forward_].saved_bytes = saved, out_[last_forward_].output_bytes = output; }
  // A memory-bound operation moving `forward` bytes, and `backward` in its gradient.
  void memory(const std::string& name, double forward, double backward, double kernels = 1) {
    push_memory(name, OpPass::forward, forward, kernels);
    if (backward > 0) push_memory(name + "_grad", OpPass::backward, backward, kernels);
  }
  // `elements` of an operation as the model's code writes it when the code lists it, else at the op list's
  // `forward` and `backward` bytes.
  void coded(const std::string& name, const CodedOp& op, double elements, double forward, double backward) {
    if (!op.listed) return memory(name, forward, backward);
    push_memory(name, OpPass::forward, elements * op.forward_bytes, op.forward_kernels, true);
    push_memory(name + "_grad", OpPass::backward, elements * op.backward_bytes, op.backward_kernels, true);
  }
  void push_memory(const std::string& name, OpPass pass, double bytes, double kernels, bool coded = false) {
    Op o;
    o.kind = OpKind::memory, o.pass = pass, o.name = name, o.count = count_, o.bytes = bytes, o.kernels = kernels, o.coded = coded;
    push(o);
  }
  // `blocks` causal attention kernels of `seq` per op (a ring's steps: cp).
  void fused_attention(double rows, double seq, double head, double blocks) {
    for (bool backward : {false, true}) {
      Op o;
      o.kind = OpKind::attention, o.pass = backward ? OpPass::backward : OpPass::forward, o.name = "attention";
      o.count = count_ * blocks, o.rows = rows, o.seq = seq, o.head = head, o.attention_backward = backward;
      push(o);
    }
  }

 private:
  void push(const Op& o) {
    if (o.pass == OpPass::forward) last_forward_ = out_.size();
    out_.push_back(o);
  }
  std::vector<Op>& out_;
  double count_;
  bool fp8_;
  std::size_t last_forward_ = 0;
};

// One transformer block of `N` tokens: norms, QKV (RoPE for the Llama
// family), attention, output projection, MLP (GELU or SwiGLU), two residual
// adds. Eager attention: QK^T and PV as batched GEMMs over every sequence
// and head (the whole s x s square: the causal mask is applied to it) and
// the softmax (scale, mask, normalise) over the scores.
// Under tensor parallelism, the member's heads, key/value heads and MLP
// columns (H, kv and F below), the rest whole; under context parallelism
// its seq/cp tokens, attention as OpOptions::cp says.
// What each op keeps for its backward: a norm its input and output (or, as
// the model's code writes it, what its kernels keep) and its fp32
// statistics (mean and rstd, or rstd); QKV its output (Q, K and V, rotated
// in place by RoPE); the attention its output and FlashAttention's fp32
// log-sum-exp per head, or eager attention's softmax its H x s weights per
// token; the MLP's first matmul its output (GELU's input; SwiGLU's gate and
// up) and its activation its output. The projections and residual adds
// keep nothing more: their outputs are the next norm's input. With 16-bit
// activations and fused attention this is Korthikanti et al. 2022 ("Reducing
// Activation Recomputation in Large Transformer Models", section 4.1, table 2)
// per layer: 34·s·b·h/t bytes under tensor and sequence parallelism, less its
// two dropout masks (s·b·h/t each). Under FP8 a linear layer keeps the FP8
// cast of its input for the weight gradient, one byte an element, in place
// of the 16-bit output of the norm or activation before it, and the output
// projection keeps one of the attention's output beside the attention's own
// (Transformer Engine's LayerNormLinear, LayerNormMLP and Linear save their
// FP8 input: transformer_engine/pytorch/module/layernorm_linear.py,
// layernorm_mlp.py, linear.py).
void block_ops(OpBuilder& b, const GptConfig& m, double batch, double seq, const OpOptions& o) {
  const double a = o.activation_bytes, N = batch * seq / o.cp, h = m.channels, d = m.head_size(), t = o.tp;
  const double H = m.heads / t, kv = static_cast<double>(tp_local_kv(m, o.tp)) * d, F = m.ffn_size() / t, q = H * d;
  const double R = o.sp ? N / t : N;  // the rows the norms and residual adds run on
  const bool llama = m.family() == "llama";
  const double gemm_input = o.fp8 ? 1 : a;  // bytes of an element a linear layer keeps of its input
  const double norm_kept =
      (o.code.norm.listed ? R * h * o.code.norm_saved_bytes : R * h * (a + gemm_input)) + R * (m.norm == Norm::layernorm ? 8.0 : 4.0);
  b.coded("norm1", o.code.norm, R * h, 2 * R * h * a, 3 * R * h * a);
  b.keeps(norm_kept);
  b.linear("qkv", N, q + 2 * kv, h);
  b.keeps(N * (q + 2 * kv) * a, N * (q + 2 * kv) * a);
  if (llama) b.coded("rope", o.code.rope, N * (q + kv), 2 * N * (q + kv) * a, 2 * N * (q + kv) * a);
  if (o.attention == "eager") {  // the whole sequence for the member's heads (1/cp of them under Ulysses)
    const double heads = batch * H / (o.ulysses ? o.cp : 1), scores = heads * seq * seq;
    b.gemm("scores", OpPass::forward, heads, seq, seq, d);  // its output is the softmax's input, kept there
    b.memory("softmax", 3 * 2 * scores * a, 3 * scores * a, 3);
    b.keeps(scores * a);
    b.gemm("context", OpPass::forward, heads, seq, d, seq);
    b.keeps(N * q * a, N * q * a);
    // Backward: dP = dO V^T (s x s over d); dV = P^T dO, dQ = dS K, dK = dS^T Q (s x d over s).
    b.gemm("probs_grad", OpPass::backward, heads, seq, seq, d);
    b.gemm("qkv_grads", OpPass::backward, 3 * heads, seq, d, seq);
  } else if (o.ulysses) {
    b.fused_attention(batch * H / o.cp, seq, d, 1);
    b.keeps(N * q * a + N * 4 * H, N * q * a);
  } else {
    b.fused_attention(batch * H, seq / o.cp, d, o.cp);
    b.keeps(N * q * a + N * 4 * H, N * q * a);
  }
  b.linear("proj", N, h, q);
  b.keeps(o.fp8 ? N * q * gemm_input : 0, N * h * a);
  b.memory("residual1", 3 * R * h * a, 3 * R * h * a);
  b.coded("norm2", o.code.norm, R * h, 2 * R * h * a, 3 * R * h * a);
  b.keeps(norm_kept);
  if (m.mlp == Mlp::swiglu) {
    b.linear("gate_up", N, 2 * F, h);
    b.keeps(N * 2 * F * a, N * 2 * F * a);
    b.memory("swiglu", 3 * N * F * a, 5 * N * F * a);
    b.keeps(N * F * gemm_input);
  } else {
    b.linear("fc", N, F, h);
    b.keeps(N * F * a, N * F * a);
    b.memory("gelu", 2 * N * F * a, 3 * N * F * a);
    b.keeps(N * F * gemm_input);
  }
  b.linear("fc_proj", N, h, F);
  b.keeps(0, N * h * a);
  b.memory("residual2", 3 * R * h * a, 3 * R * h * a);
}
}  // namespace

std::vector<Op> micro_batch_ops(const GptConfig& m, int micro_batch, int seq_len, const OpOptions& o) {
  std::vector<Op> out;
  // V: a tensor-parallel member's vocabulary columns (the largest member's share; model/gpt.h's vocabulary-parallel head).
  const double L = m.layers, batch = micro_batch, seq = seq_len, N = batch * seq / o.cp, h = m.channels, a = o.activation_bytes;
  const double V = std::ceil(static_cast<double>(m.vocab) / o.tp);
  OpBuilder ends(out, 1, false);
  // The embedding: gather the token rows (and add the positions); backward
  // scatters the rows' gradients into the table.
  const double lookups = m.positions == Positions::learned ? 2 : 1;
  if (o.vocabulary) ends.memory("embedding", (lookups + 1) * N * h * a, (lookups + 1) * N * h * a);
  OpBuilder blocks(out, L, o.fp8);
  const std::size_t block_begin = out.size();
  block_ops(blocks, m, batch, seq, o);
  // Recomputation: the forward of the blocks that keep only their input
  // (all, or one in `every`), the attention core alone (selective), or what
  // torchtitan's per-op policy recomputes (selective-op: ops_policy).
  const std::size_t block_end = out.size();
  std::vector<Op> recomputed;
  for (std::size_t i = block_begin; i < block_end; ++i) {
    const Op& op = out[i];
    if (op.pass != OpPass::forward) continue;
    const bool attention_core = op.kind == OpKind::attention || op.name == "scores" || op.name == "softmax" || op.name == "context";
    double times = 0;  // blocks recomputing this op
    switch (o.recompute.kind) {
      case Recompute::Kind::full: times = L; break;
      case Recompute::Kind::every: times = L / o.recompute.every; break;
      case Recompute::Kind::selective: times = attention_core ? L : 0; break;
      case Recompute::Kind::ops: times = L * ops_policy(m, op, o).recomputed; break;
      case Recompute::Kind::none: break;
    }
    if (times <= 0) continue;
    Op r = op;
    r.pass = OpPass::recompute, r.count = op.count / L * times;
    recomputed.push_back(r);
  }
  out.insert(out.end(), recomputed.begin(), recomputed.end());
  // The head: final norm, logits, loss. A fused loss reads the 16-bit logits
  // once and writes their gradient in place; otherwise they are upcast to
  // fp32, log-softmaxed, and the gradient goes back through both (PyTorch's
  // autocast cross_entropy).
  if (!o.vocabulary) return out;
  const double R = o.sp ? N / o.tp : N;
  ends.coded("norm_f", o.code.norm, R * h, 2 * R * h * a, 3 * R * h * a);
  ends.linear("head", N, V, h);
  if (o.fused_loss) ends.memory("loss", N * V * a, 2 * N * V * a);
  else ends.memory("loss", N * V * (a + 4 + 8), N * V * (4 + 12 + 4 + a), 3);  // cast, log-softmax; their gradients
  return out;
}

OpOptions op_options(const SimInput& in) {
  OpOptions o;
  o.attention = in.attention_implementation();
  o.activation_bytes = in.engine.activation_bytes, o.fused_loss = in.engine.fused_loss, o.fp8 = in.fp8, o.recompute = in.recompute;
  o.code = in.model_code;
  o.tp = in.mesh.tp, o.sp = in.mesh.sp;
  o.cp = in.context.degree, o.ulysses = in.context.kind == ContextShape::Kind::a2a;
  o.vocabulary = in.pipeline.priced_stage == 0;
  return o;
}

OpsPolicy ops_policy(const GptConfig& m, const Op& op, const OpOptions& o) {
  if (op.kind == OpKind::memory) return {1, 0};  // every memory-bound op recomputed
  // The attention core kept: its result (eager attention's scores are the softmax's input, which is recomputed).
  if (op.kind == OpKind::attention || op.name == "scores" || op.name == "context") return {0, op.output_bytes};
  // The matmuls in the order the block runs them, every other one recomputed: Llama's wq, wk, wv (qkv: wk), wo
  // (proj), w1, w3 (gate_up: w3), w2 (fc_proj); GPT-2's c_attn (qkv), c_proj (proj), c_fc (fc), mlp.c_proj
  // (fc_proj). Recomputed: `columns` of the op's n output columns.
  const bool llama = m.family() == "llama";
  double columns = 0;
  if (op.name == "qkv") columns = llama ? static_cast<double>(tp_local_kv(m, o.tp)) * m.head_size() : 0;
  else if (op.name == "proj") columns = op.n;
  else if (op.name == "gate_up") columns = op.n / 2;
  else if (op.name == "fc_proj") columns = llama ? 0 : op.n;
  return {columns / op.n, op.output_bytes * (op.n - columns) / op.n};
}

namespace {
// One block's forward ops, once.
std::vector<Op> one_block(const GptConfig& m, int micro_batch, int seq_len, const OpOptions& o) {
  std::vector<Op> out;
  OpBuilder b(out, 1, o.fp8);
  block_ops(b, m, micro_batch, seq_len, o);
  return out;
}
}  // namespace

double block_saved_bytes(const GptConfig& m, int micro_batch, int seq_len, const OpOptions& o) {
  double saved = 0;
  for (const Op& op : one_block(m, micro_batch, seq_len, o)) saved += op.saved_bytes;
  return saved;
}

SavedActivations saved_activations(const GptConfig& m, int micro_batch, int seq_len, const OpOptions& o) {
  const double block = block_saved_bytes(m, micro_batch, seq_len, o);
  // The block's input: a sequence-parallel member's 1/tp of the rows.
  const double input = static_cast<double>(m.channels) * o.activation_bytes * micro_batch * seq_len / o.cp / (o.sp ? o.tp : 1), L = m.layers;
  switch (o.recompute.kind) {
    case Recompute::Kind::full: return {L * input, 2 * block};
    case Recompute::Kind::every: return {L / o.recompute.every * input + (L - L / o.recompute.every) * block, 2 * block};
    case Recompute::Kind::selective: {  // the attention core recomputed: the block keeps what a fused attention keeps
      OpOptions fused = o;
      fused.attention = "flash2";
      return {L * block_saved_bytes(m, micro_batch, seq_len, fused), 0};
    }
    case Recompute::Kind::ops: {  // the block's input and what the policy keeps; one block's set while it recomputes
      double kept = input;
      for (const Op& op : one_block(m, micro_batch, seq_len, o))
        if (op.pass == OpPass::forward) kept += ops_policy(m, op, o).kept_bytes;
      return {L * kept, block};
    }
    case Recompute::Kind::none: break;
  }
  return {L * block, 0};
}

Op optimizer_op(double shard_params, double param_bytes) {
  // AdamW in fp32: read p, g, m, v and write p, m, v (28 bytes); the
  // gradient norm reads g and clipping scales it (12); the working
  // parameters are written (param_bytes).
  Op o;
  o.kind = OpKind::memory, o.pass = OpPass::backward, o.name = "optimizer";
  o.bytes = shard_params * (28 + 12 + param_bytes);
  o.kernels = 6;
  return o;
}

}  // namespace tierzero
