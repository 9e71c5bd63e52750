// Reads a DeepSpeed JSON config for the keys that map onto tierzero:
// zero_optimization.{stage, zero_hpz_partition_size, zero_quantized_weights,
// zero_quantized_gradients}, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps, optimizer (AdamW/Adam: lr, betas, eps,
// weight_decay), scheduler (warmup_num_steps, warmup_max_lr,
// total_num_steps), bf16.enabled, fp16.enabled, gradient_clipping. Every
// other key is listed in `ignored` so the caller can warn about it.
#pragma once
#include <string>
#include <vector>

#include "tierzero/plan.h"
#include "tierzero/train_config.h"

namespace tierzero {

struct DeepSpeedMapping {
  Plan plan;
  std::vector<std::string> ignored;  // dotted key paths tierzero does not implement
};

// Applies the config's training keys to `cfg` and returns the plan for
// `topo`. Throws ConfigError naming the file and key for malformed JSON,
// wrong types, or a zero_hpz_partition_size that is no group size of the
// topology.
DeepSpeedMapping read_deepspeed_config(const std::string& path, const Topology& topo, TrainConfig& cfg);
DeepSpeedMapping parse_deepspeed_config(const std::string& text, const std::string& origin, const Topology& topo, TrainConfig& cfg);

}  // namespace tierzero
