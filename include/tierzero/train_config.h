// Everything a training run is configured with, and the one reader for it:
// a TOML file (`--config run.toml`, keys as the fields below) overridden by
// command-line flags. Unknown keys and bad values are ConfigErrors that
// name the key. The file's [plan] table, the partition plan of a multi-rank
// run, is the plan layer's to read (read_config_plan, tierzero/plan.h).
// The defaults below are every command's: train's, and the micro-batch,
// sequence, recomputation and parameter dtype that simulate, plan and
// memory assume. Value type.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "tierzero/dtype.h"
#include "tierzero/gpt_config.h"
#include "tierzero/optim.h"

namespace tierzero {

struct TrainConfig {
  GptConfig model = gpt_preset("gpt-tiny");  // key "model": a preset name, or a [model] table
  std::string data = "builtin";              // "builtin" or a token file
  std::int64_t steps = 300;
  int micro_batch = 4;    // sequences per rank per micro-batch
  int grad_accum = 1;     // micro-batches per step
  int seq_len = 0;        // 0: the model's context, at most kDefaultMaxSeqLen
  std::uint64_t seed = 1234;
  LrSchedule schedule{3e-3f, 0.1f, 20, 0};  // total 0: = steps
  AdamWConfig adamw{};
  float grad_clip = 1.0f;  // 0 disables
  DType param_dtype = DType::bf16;  // storage (and wire type) of the working parameters
  // What the model's GEMMs compute in (tierzero/dtype.h): automatic is bf16
  // with bf16 parameters on a device with bf16 matrix units, else fp32.
  MatmulType matmul = MatmulType::automatic;
  // fp16 dynamic loss scaling, as PyTorch's GradScaler and DeepSpeed's fp16
  // section: start at 2^loss_scale_power, halve on a step with non-finite
  // gradients (skipped), double after loss_scale_window good steps in a row.
  int loss_scale_power = 16;
  int loss_scale_window = 1000;
  // Full activation recomputation: backward runs each block's forward again
  // instead of keeping its activations (what fits a large model's memory).
  bool recompute = true;
  // Where each step's time goes, per rank (StepBreakdown): printed and in the metrics.
  bool breakdown = false;
  // Communication queues of the sharding engine: 2, parameter gathers and
  // gradient reductions each in their own program order on their own
  // thread, so a gather never waits behind a reduction (where the backend
  // allows: MPI); 1, one order for everything.
  int comm_queues = 2;
  std::string metrics;     // JSONL file, one object per step
  // Validation: held-out data from its own file, or the last val_fraction
  // of `data` (then not trained on); its mean loss over eval_batches
  // batches every eval_every steps and after the last (0: only after it).
  std::string val_data;
  double val_fraction = 0;
  int eval_every = 0;
  int eval_batches = 8;
  int log_every = 10;      // plain-log cadence when not on a terminal

  // Throws ConfigError naming the bad field.
  void validate() const;
  // The default sequence: the model's context up to 2048 tokens (a Llama
  // 3.1 context of 131072 is no training default).
  static constexpr int kDefaultMaxSeqLen = 2048;
  int effective_seq_len() const { return seq_len > 0 ? seq_len : std::min(model.context, kDefaultMaxSeqLen); }
};

// Reads a TOML file into `cfg` (keys not given keep their values).
void load_train_config(const std::string& path, TrainConfig& cfg);
// Parses TOML text (origin names it in errors).
void parse_train_config(const std::string& text, const std::string& origin, TrainConfig& cfg);

}  // namespace tierzero
