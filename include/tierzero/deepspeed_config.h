// Reads a DeepSpeed JSON config so that it means what DeepSpeed means:
// the keys that map onto tierzero (ZeRO stage and ZeRO++ keys, offload,
// persistence threshold, gradient bucket, batch, optimizer, scheduler,
// bf16/fp16 and fp16's loss scaling, clipping, the tensorboard and
// csv_monitor monitors: rank 0's scalars in output_path/job_name) are taken, and a key the
// config leaves out takes DeepSpeed's default, not tierzero's (no
// clipping; AdamW's betas (0.9, 0.999), eps 1e-8, weight decay 0; fp32
// parameters unless bf16 or fp16 is enabled; a constant rate without a
// scheduler). deepspeed_keys() is the whole mapping, key by key: taken,
// taken with a note, ignored (listed in `ignored` with the reason, as is
// any key it does not name) or refused; docs/deepspeed.md is tested against
// it. Values set to "auto" (Hugging Face's integration) keep tierzero's
// value (flags, TOML, defaults) and are listed in `auto_keys`.
//
// Order with the other sources: DeepSpeed's defaults, then a --config TOML
// file, then the config's keys, then the command-line flags (flags win),
// then finish_deepspeed_run on the final configuration.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tierzero/plan.h"
#include "tierzero/train_config.h"

namespace tierzero {

struct DeepSpeedMapping {
  Plan plan;
  std::vector<std::string> ignored;    // dotted key paths tierzero does not implement, each with its reason where the table has one
  std::vector<std::string> auto_keys;  // dotted key paths set to "auto"
  // The batch keys the config gives; finish_deepspeed_run derives the
  // others by DeepSpeed's rule (a flag counts as given: set these from it).
  std::optional<std::int64_t> train_batch_size, micro_batch, grad_accum;
  std::optional<std::int64_t> total_num_steps;  // the scheduler's: the run's length unless --steps says otherwise
  std::vector<std::string> notes;               // what the run should say about the defaults it took
  std::string tensorboard_dir, csv_monitor_dir;  // the enabled monitors' folders; "" when off
};

// A DeepSpeed config file's text, checked to be a JSON object; applied in
// two steps (see above). Immutable; the steps may run on any thread.
class DeepSpeedConfig {
 public:
  // Throws ConfigError naming `origin` for malformed JSON or a top level that is not an object.
  DeepSpeedConfig(std::string text, std::string origin);
  // Reads `path`; ConfigError when it cannot be read.
  static DeepSpeedConfig read(const std::string& path);
  const std::string& origin() const { return origin_; }

  // DeepSpeed's defaults for the training keys the config leaves out
  // (deepspeed_keys(): their `deepspeed_default`).
  void apply_defaults(TrainConfig& cfg) const;
  // Applies the keys the config gives to `cfg` and returns the plan for
  // `topo`. Throws ConfigError naming the file and key for a wrong type, a
  // value out of range (a fraction where a whole number belongs, a negative
  // rate, ...), ZeRO++ keys under a stage below 3, bf16 and fp16 both
  // enabled, a scheduler or optimizer tierzero does not implement, a
  // refused key, or a zero_hpz_partition_size that is no group size of the topology.
  DeepSpeedMapping apply(const Topology& topo, TrainConfig& cfg) const;
  // The tensor-parallel degree, `tensor_parallel.autotp_size` (DeepSpeed's
  // AutoTP training), 1 when absent: what the mesh is made of before
  // apply() lays the plan out over its data-parallel ranks. Throws
  // ConfigError naming the file and key for a value that is not a whole
  // number of at least 1.
  int tensor_parallel_size() const;

 private:
  std::string text_, origin_;
};

// apply_defaults then apply, on one configuration (tests, the fuzzer).
DeepSpeedMapping parse_deepspeed_config(const std::string& text, const std::string& origin, const Topology& topo, TrainConfig& cfg);

// On the final configuration: DeepSpeed's batch rule (with two of
// train_batch_size, micro batch and accumulation the third is derived;
// with train_batch_size alone, accumulation 1; with the micro batch alone,
// accumulation 1; the three must satisfy train_batch_size = micro batch x
// accumulation x ranks, the data-parallel ones: the world's over the
// tensor-parallel degree, as DeepSpeed counts them), setting cfg.micro_batch and cfg.grad_accum; with
// neither train_batch_size nor a micro batch (a config DeepSpeed refuses)
// cfg's own are kept. Throws ConfigError naming `ds`'s origin. Returns
// the warnings the run should print: a warmup longer than the run.
std::vector<std::string> finish_deepspeed_run(const DeepSpeedMapping& ds, const std::string& origin, TrainConfig& cfg, int data_ranks);

// How tierzero reads one key of a DeepSpeed config.
enum class DeepSpeedUse {
  taken,    // means what DeepSpeed means
  noted,    // taken, with a note on how it maps or what differs
  ignored,  // listed in the run's warning, with the reason
  refused   // any value but DeepSpeed's default is an error naming the key
};
std::string_view deepspeed_use_name(DeepSpeedUse u);  // "taken", "taken, with a note", "ignored", "refused"

struct DeepSpeedKey {
  std::string_view path;              // dotted: "zero_optimization.stage", "optimizer.params.betas"
  DeepSpeedUse use;
  std::string_view deepspeed_default; // what a config that leaves the key out gets (DeepSpeed's default)
  std::string_view note;              // how it maps, or why it is ignored or refused
};
// The whole mapping, in docs/deepspeed.md's order. A key not named here is ignored and listed without a reason.
const std::vector<DeepSpeedKey>& deepspeed_keys();

}  // namespace tierzero
