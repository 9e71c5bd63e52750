// The operations one micro-batch of a training step runs on one rank, as
// the engines compute them (docs/simulator.md, "Compute"): every GEMM with
// its shape, the attention core, and every memory-bound operation (norms,
// activations, residual adds, RoPE, softmax, cross-entropy, the embedding)
// with the bytes it reads and writes; forward, backward and recomputation.
// Pure functions over the model's shape; the pricing is compute_model.h's.
#pragma once
#include <string>
#include <vector>

#include "tierzero/gpt_config.h"
#include "tierzero/model_code.h"
#include "tierzero/simulator.h"

namespace tierzero {

enum class OpKind { gemm, attention, memory };
enum class OpPass { forward, backward, recompute };

// One operation, `count` times (a batched GEMM's batch, the layers).
//   gemm:      C[m x n] = A[m x k] B[k x n]
//   attention: `rows` sequences x heads of length `seq` with head size
//              `head`, causal; forward or backward by `pass`
//   memory:    `bytes` read and written in `kernels` kernels
struct Op {
  OpKind kind = OpKind::memory;
  OpPass pass = OpPass::forward;
  std::string name;
  double count = 1;
  double m = 0, n = 0, k = 0;
  bool fp8 = false;  // a linear layer's GEMM in FP8 (the attention products stay 16-bit)
  double rows = 0, seq = 0, head = 0;
  bool attention_backward = false;
  double bytes = 0;
  double kernels = 1;
  bool coded = false;  // bytes as the model's code moves them (tierzero/model_code.h), not the op list's minimum
  // A block's forward op, in each block: the bytes it keeps for its backward when nothing is recomputed, and the
  // bytes of its output (of which torchtitan's selective-op policy keeps what it does not recompute: ops_policy).
  double saved_bytes = 0, output_bytes = 0;
};

// What the op list depends on besides the model and the batch.
struct OpOptions {
  std::string attention = "flash2";  // "eager": two batched GEMMs and a softmax; else one fused kernel
  int activation_bytes = 2;
  bool fused_loss = false;
  bool fp8 = false;
  Recompute recompute;
  ModelCode code;  // how the model's code writes its norms and rotary embedding (default: the engine's kernels)
  // Tensor parallelism (Megatron-LM's layers): a member computes its 1/tp of
  // the heads (QKV, attention, output projection) and of the MLP's columns;
  // norms, residuals, the embedding and the head run whole on every member
  // (with sequence parallelism, `sp`, the norms and residual adds on its 1/tp of the rows).
  int tp = 1;
  bool sp = false;
  // Context parallelism (tierzero/simulator.h, ContextShape): every op on a
  // member's seq/cp tokens but attention, which computes 1/cp of the causal
  // total: ring, cp blocks of seq/cp queries against seq/cp keys (the steps
  // of the ring); a2a (ulysses), the whole sequence for 1/cp of the heads.
  int cp = 1;
  bool ulysses = false;
  // The embedding and the head with its loss (false: a pipeline's interior stage, which holds neither; sim/pipeline.h).
  bool vocabulary = true;
};

// The options of `in`'s step: its attention, engine, recomputation, model code, tensor- and context-parallel degrees.
OpOptions op_options(const SimInput& in);

// Every operation of one micro-batch of `micro_batch` sequences of `seq_len`.
std::vector<Op> micro_batch_ops(const GptConfig& model, int micro_batch, int seq_len, const OpOptions& options);

// torchtitan's selective-op activation checkpointing (torchtitan
// models/llama/parallelize_llama.py, _save_list: it saves the outputs of
// the attention and of every other matmul, in the order the block runs
// them, and recomputes everything else), for one of a block's forward ops:
// the share of the op it recomputes and the bytes of its output it keeps.
struct OpsPolicy {
  double recomputed = 0;
  double kept_bytes = 0;
};
OpsPolicy ops_policy(const GptConfig& model, const Op& op, const OpOptions& options);

// The activations one micro-batch keeps for its backward under the options'
// recomputation, from the block's ops' saved bytes (docs/simulator.md,
// "Memory"): `saved` through the backward, `recomputing` while one block
// recomputes (its set, and for full and every:N its gradients' too).
struct SavedActivations {
  double saved = 0, recomputing = 0;
};
SavedActivations saved_activations(const GptConfig& model, int micro_batch, int seq_len, const OpOptions& options);
// What one block keeps for its backward with nothing recomputed: its ops' saved bytes.
double block_saved_bytes(const GptConfig& model, int micro_batch, int seq_len, const OpOptions& options);

// The optimizer's update of a shard of `shard_params` parameters (AdamW in
// fp32, the gradient norm and clipping, the 16-bit parameter write): one
// memory-bound pass per step.
Op optimizer_op(double shard_params, double param_bytes);

}  // namespace tierzero
