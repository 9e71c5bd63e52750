// The DeepSpeed config keys tierzero knows, and what it does with each
// (tierzero/deepspeed_config.h). The defaults are DeepSpeed's, from its
// sources: deepspeed/runtime/constants.py (gradient_clipping, fp16),
// runtime/config.py (the batch rule), ops/adam/fused_adam.py and
// cpu_adam.py (the optimizer's), runtime/lr_schedules.py (the
// schedulers'), runtime/zero/config.py and offload_config.py (ZeRO's).
// docs/deepspeed.md lists exactly these rows (tests/deepspeed_config_test.cc).
#include "tierzero/deepspeed_config.h"

namespace tierzero {

std::string_view deepspeed_use_name(DeepSpeedUse u) {
  switch (u) {
    case DeepSpeedUse::taken: return "taken";
    case DeepSpeedUse::noted: return "taken, with a note";
    case DeepSpeedUse::ignored: return "ignored";
    case DeepSpeedUse::refused: return "refused";
  }
  return "?";
}

const std::vector<DeepSpeedKey>& deepspeed_keys() {
  using enum DeepSpeedUse;
  static const std::vector<DeepSpeedKey> keys = {
      // Batch.
      {"train_batch_size", noted, "micro batch x accumulation x ranks",
       "DeepSpeed's rule: given two of train_batch_size, train_micro_batch_size_per_gpu and gradient_accumulation_steps (a flag "
       "counts as given), the third is derived; given train_batch_size alone, accumulation 1; the three must agree"},
      {"train_micro_batch_size_per_gpu", noted, "train_batch_size / ranks / accumulation",
       "with neither it nor train_batch_size (a config DeepSpeed refuses), --micro-batch or --config's micro_batch"},
      {"gradient_accumulation_steps", taken, "1, or derived by the batch rule", ""},
      // Optimizer.
      {"gradient_clipping", taken, "0 (no clipping)", "the global L2 norm of all gradients, as torch.nn.utils.clip_grad_norm_"},
      {"optimizer.type", noted, "none: the training script's optimizer",
       "Adam and AdamW are AdamW (DeepSpeed's Adam is AdamW unless adam_w_mode is false); other types are refused; without an "
       "optimizer section, AdamW with --lr and DeepSpeed's Adam defaults for the rest"},
      {"optimizer.params.lr", noted, "0.001",
       "the peak rate without a scheduler and under WarmupCosineLR, and WarmupLR's without warmup_max_lr; WarmupDecayLR's is warmup_max_lr"},
      {"optimizer.params.betas", taken, "[0.9, 0.999]", ""},
      {"optimizer.params.eps", taken, "1e-8", ""},
      {"optimizer.params.weight_decay", noted, "0 (0.01 with torch_adam, torch.optim.AdamW's)",
       "decoupled, on matrices and embeddings, not on norms and biases (as Hugging Face's Trainer groups them; a script that hands "
       "DeepSpeed model.parameters() decays all)"},
      {"optimizer.params.torch_adam", noted, "false", "the same AdamW; true makes weight_decay's default torch.optim.AdamW's 0.01"},
      {"optimizer.params.adam_w_mode", refused, "true", "false (Adam with L2 regularisation) is not implemented"},
      {"optimizer.params.bias_correction", refused, "true", "false is not implemented: the moments are always bias-corrected"},
      {"optimizer.params.amsgrad", refused, "false", "true is not implemented (DeepSpeed's FusedAdam refuses it too)"},
      // Learning-rate schedule.
      {"scheduler.type", noted, "none: a constant rate",
       "WarmupLR, WarmupDecayLR and WarmupCosineLR, as deepspeed/runtime/lr_schedules.py defines them; other types are refused; "
       "without a scheduler section the rate is constant (--warmup adds a linear warmup)"},
      {"scheduler.params.warmup_min_lr", taken, "0", "WarmupLR, WarmupDecayLR"},
      {"scheduler.params.warmup_max_lr", noted, "WarmupLR: the optimizer's lr; WarmupDecayLR: 0.001", "the peak rate"},
      {"scheduler.params.warmup_num_steps", noted, "1000", "a warmup longer than the run is a warning"},
      {"scheduler.params.warmup_type", taken, "\"log\"", ""},
      {"scheduler.params.total_num_steps", noted, "none (WarmupDecayLR and WarmupCosineLR need it)",
       "the run's length when --steps is not given; without it, the decay ends at --steps"},
      {"scheduler.params.warmup_min_ratio", taken, "0", "WarmupCosineLR"},
      {"scheduler.params.cos_min_ratio", taken, "0.0001", "WarmupCosineLR"},
      // Precision.
      {"bf16.enabled", noted, "false",
       "bf16 parameters, fp32 master weights and optimizer state; with neither bf16 nor fp16 enabled the parameters are fp32, as "
       "DeepSpeed trains"},
      {"fp16.enabled", noted, "false", "fp16 parameters with dynamic loss scaling; a step with non-finite gradients is skipped"},
      {"fp16.initial_scale_power", taken, "16", ""},
      {"fp16.loss_scale_window", taken, "1000", ""},
      {"fp16.loss_scale", refused, "0 (dynamic)", "a static loss scale is not implemented"},
      {"fp16.hysteresis", ignored, "2", "the scale halves at every overflow (hysteresis 1): after two overflows in a row it is lower than DeepSpeed's"},
      {"fp16.consecutive_hysteresis", ignored, "false", "the scale halves at every overflow (hysteresis 1)"},
      {"fp16.min_loss_scale", ignored, "1", "the scale has no floor"},
      {"fp16.auto_cast", ignored, "false", "each operation runs in tierzero's own precision (--matmul)"},
      {"communication_data_type", ignored, "none: the parameter dtype", "gradients are reduced in the parameter dtype, or with the plan's quantised bits"},
      {"prescale_gradients", ignored, "false", "gradients are summed, then divided by the rank count once (DeepSpeed's default)"},
      {"gradient_predivide_factor", ignored, "1.0", "gradients are summed, then divided by the rank count once (DeepSpeed's default)"},
      // ZeRO.
      {"zero_optimization.stage", noted, "0", "0 ddp, 1 zero1, 2 zero2, 3 zero3 (zeropp with a ZeRO++ key)"},
      {"zero_optimization.zero_hpz_partition_size", noted, "1",
       "hpZ: the secondary parameter copy partitioned over the topology's level of that group size (another size is refused); stage 3"},
      {"zero_optimization.zero_quantized_weights", noted, "false", "qwZ: the weight all-gather in 8-bit blocks; stage 3"},
      {"zero_optimization.zero_quantized_gradients", noted, "false", "qgZ: the gradient reduce-scatter in 4-bit blocks, hop by hop; stage 3"},
      {"zero_optimization.reduce_bucket_size", noted, "500000000",
       "elements: the gradient bucket, in the parameter dtype's bytes; without it, tierzero's bucket (a speed setting: the sums are "
       "the same); ZeRO-1 keeps one bucket"},
      {"zero_optimization.overlap_comm", noted, "true at stage 3",
       "true is what tierzero always does; false is ignored: communication always overlaps compute here, gathers run ahead and "
       "reductions under backward"},
      {"zero_optimization.stage3_param_persistence_threshold", noted, "100000",
       "a unit of at most that many parameters stays whole on every rank (DeepSpeed: each such tensor); \"auto\": tierzero's 0; stage 3"},
      {"zero_optimization.offload_optimizer.device", noted, "\"none\"",
       "none, cpu or nvme: the fp32 master and AdamW's moments, and the update, on the host or in swap files"},
      {"zero_optimization.offload_optimizer.nvme_path", taken, "none", "needed with nvme"},
      {"zero_optimization.offload_optimizer.buffer_count", noted, "4", "the page-aligned buffers NVMe swaps stream through, one unit's shard each (at least 2)"},
      {"zero_optimization.offload_optimizer.pin_memory", noted, "false", "accepted: host buffers are plain memory on the CPU, where nothing is copied to a device"},
      {"zero_optimization.offload_optimizer.fast_init", ignored, "false", "the swap file is written once, at start"},
      {"zero_optimization.offload_optimizer.buffer_size", ignored, "none", "NVMe buffers hold one unit's optimizer shard each"},
      {"zero_optimization.offload_optimizer.ratio", ignored, "1.0", "the whole optimizer update runs where the state lives"},
      {"zero_optimization.offload_param.device", noted, "\"none\"",
       "none, cpu or nvme: the 16-bit parameter shards on the host or in swap files read ahead of each gather; stage 3"},
      {"zero_optimization.offload_param.nvme_path", taken, "none", "needed with nvme"},
      {"zero_optimization.offload_param.buffer_count", noted, "5", "the page-aligned buffers NVMe swaps stream through, one unit's shard each (at least 2)"},
      {"zero_optimization.offload_param.pin_memory", noted, "false", "accepted: host buffers are plain memory on the CPU, where nothing is copied to a device"},
      {"zero_optimization.offload_param.buffer_size", ignored, "100000000", "NVMe buffers hold one unit's parameter shard each"},
      {"zero_optimization.offload_param.max_in_cpu", ignored, "1000000000", "with nvme only the NVMe buffers (and an hpZ copy) are in host memory"},
      {"zero_optimization.stage3_prefetch_bucket_size", ignored, "50000000", "tierzero prefetches whole units, the plan's prefetch (1 unit ahead by default)"},
      {"zero_optimization.stage3_model_persistence_threshold", ignored, "sys.maxsize",
       "every unit under stage3_param_persistence_threshold is kept whole, without a cap on their sum"},
      {"zero_optimization.stage3_max_live_parameters", ignored, "1000000000", "the live parameters are the prefetch window"},
      {"zero_optimization.stage3_max_reuse_distance", ignored, "1000000000", "the live parameters are the prefetch window"},
      {"zero_optimization.stage3_gather_16bit_weights_on_model_save", ignored, "false",
       "checkpoints hold each rank's fp32 master shard; ckpt export writes the whole model"},
      {"zero_optimization.allgather_bucket_size", ignored, "500000000", "parameters are all-gathered per unit, not in buckets"},
      {"zero_optimization.allgather_partitions", ignored, "true", "updated parameters are always all-gathered"},
      {"zero_optimization.reduce_scatter", ignored, "true", "gradients are always reduce-scattered into their partitions (all-reduced under ddp)"},
      {"zero_optimization.contiguous_gradients", ignored, "true", "gradients are always packed into contiguous buckets"},
      {"zero_optimization.round_robin_gradients", ignored, "false", "a speed setting for offload at stages 1 and 2"},
      {"zero_optimization.sub_group_size", ignored, "1000000000", "the optimizer steps unit by unit"},
      // Tensor parallelism.
      {"tensor_parallel.autotp_size", noted, "none: no tensor parallelism",
       "the tensor-parallel degree (train --tp wins), groups on the topology's innermost level; DeepSpeed's AutoTP composes with ZeRO "
       "stages 0-2, tierzero's with every stage; the batch rule counts the data-parallel ranks (ranks / autotp_size)"},
      // Everything else.
      {"wall_clock_breakdown", noted, "false", "each step's time per phase and rank (--breakdown)"},
      {"steps_per_print", ignored, "none", "--log-every sets how often a step is printed"},
      {"zero_allow_untested_optimizer", ignored, "false", "tierzero's one optimizer is AdamW"},
      {"activation_checkpointing", ignored, "none", "tierzero recomputes activations with --recompute"},
      {"flops_profiler", ignored, "none", "train prints TFLOPS per step, and --breakdown the time per phase"},
      {"tensorboard.enabled", taken, "false", "rank 0 writes its scalars as TensorBoard event files (train --tensorboard)"},
      {"tensorboard.output_path", taken, "\"\"", "the folder the job's folder goes in"},
      {"tensorboard.job_name", taken, "\"DeepSpeedJobName\"", "the events go to output_path/job_name, as DeepSpeed's monitor writes them"},
      {"csv_monitor.enabled", taken, "false", "rank 0 writes its scalars in DeepSpeed's CSV layout (train --csv-monitor)"},
      {"csv_monitor.output_path", taken, "\"\"", "the folder the job's folder goes in"},
      {"csv_monitor.job_name", taken, "\"DeepSpeedJobName\"", "one CSV file per scalar in output_path/job_name"},
  };
  return keys;
}

}  // namespace tierzero
