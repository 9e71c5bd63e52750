// Reads a DeepSpeed JSON config for the keys that map onto tierzero:
// zero_optimization.{stage, zero_hpz_partition_size, zero_quantized_weights,
// zero_quantized_gradients, reduce_bucket_size (elements: the gradient
// bucket, in the parameter dtype's bytes), overlap_comm: true (what tierzero
// always does), offload_optimizer and offload_param.{device (none, cpu,
// nvme), nvme_path, buffer_count, pin_memory}: where the plan keeps the
// optimizer state and the parameter shards (tierzero/plan.h; parameters
// only at stage 3), stage3_param_persistence_threshold (the plan's
// persist_threshold; absent: DeepSpeed's 1e5, "auto": tierzero's 0)},
// train_batch_size, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps, optimizer (AdamW/Adam: lr, betas, eps,
// weight_decay), scheduler (WarmupLR, WarmupDecayLR, WarmupCosineLR with
// their params, as DeepSpeed defines them: tierzero/optim.h),
// bf16.enabled, fp16.{enabled, initial_scale_power, loss_scale_window},
// gradient_clipping, and the monitors tensorboard and csv_monitor.{enabled,
// output_path, job_name}: where rank 0 writes its scalars, the folder
// output_path/job_name as DeepSpeed makes it (defaults "" and
// "DeepSpeedJobName"). Every other key is listed in `ignored` so the caller
// can warn about it, those that mean speed with the reason tierzero has no
// equivalent (stage3_prefetch_bucket_size, stage3_model_persistence_threshold,
// allgather_bucket_size, overlap_comm false, ...). Values set to "auto" (Hugging Face's integration)
// keep tierzero's value (flags, TOML, defaults) and are listed in
// `auto_keys`. Apply it before the command-line flags: flags win.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tierzero/plan.h"
#include "tierzero/train_config.h"

namespace tierzero {

struct DeepSpeedMapping {
  Plan plan;
  std::vector<std::string> ignored;    // dotted key paths tierzero does not implement
  std::vector<std::string> auto_keys;  // dotted key paths set to "auto"
  std::optional<std::int64_t> train_batch_size;  // checked by check_train_batch_size once the flags are in
  std::string tensorboard_dir, csv_monitor_dir;  // the enabled monitors' folders; "" when off
};

// Applies the config's training keys to `cfg` and returns the plan for
// `topo`. Throws ConfigError naming the file and key for malformed JSON,
// a wrong type, a value out of range (a fraction where a whole number
// belongs, a negative rate, ...), ZeRO++ keys under a stage below 3, bf16
// and fp16 both enabled, a scheduler or optimizer tierzero does not
// implement, or a zero_hpz_partition_size that is no group size of the
// topology.
DeepSpeedMapping read_deepspeed_config(const std::string& path, const Topology& topo, TrainConfig& cfg);
DeepSpeedMapping parse_deepspeed_config(const std::string& text, const std::string& origin, const Topology& topo, TrainConfig& cfg);
// DeepSpeed's rule train_batch_size = micro batch x accumulation x ranks,
// on the final configuration; throws ConfigError naming `origin`.
void check_train_batch_size(const DeepSpeedMapping& ds, const std::string& origin, const TrainConfig& cfg, int world_size);

}  // namespace tierzero
