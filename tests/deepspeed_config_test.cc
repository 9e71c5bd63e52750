// DeepSpeed JSON configs (tierzero/deepspeed_config.h): the schedulers and
// precision keys map as DeepSpeed defines them, a key left out takes
// DeepSpeed's default, the batch follows DeepSpeed's rule, "auto" keeps
// tierzero's values, every bad value is an error naming the file and the
// key, and every key of the table (and docs/deepspeed.md's) does what it says.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "tierzero/deepspeed_config.h"
#include "tierzero/error.h"

namespace tierzero {
namespace {

const Topology kTopo = Topology::parse("package=2,node=2,world=2", 8);

DeepSpeedMapping parse(const std::string& json, TrainConfig& cfg) { return parse_deepspeed_config(json, "ds.json", kTopo, cfg); }

std::string ds_error_of(const std::string& json) {
  TrainConfig cfg;
  try {
    parse(json, cfg);
  } catch (const ConfigError& e) {
    return e.message();
  }
  return "";
}

TEST(DeepSpeedConfig, BadValuesNameTheFileAndTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"zero_optimization": {"stage": 2, "zero_quantized_weights": true}})",
       "ds.json: 'zero_optimization.zero_quantized_weights' is a ZeRO++ setting and needs stage 3, but stage is 2"},
      {R"({"zero_optimization": {"stage": 1, "zero_quantized_gradients": true}})", "'zero_optimization.zero_quantized_gradients' is a ZeRO++"},
      {R"({"zero_optimization": {"stage": 2, "zero_hpz_partition_size": 4}})", "'zero_optimization.zero_hpz_partition_size' is a ZeRO++"},
      {R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": -2}})",
       "'zero_optimization.zero_hpz_partition_size' must be between 1 and 2147483647, got -2"},
      {R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 2.5}})", "must be a whole number, got 2.5"},
      {R"({"zero_optimization": {"stage": 2.7}})", "'zero_optimization.stage' must be a whole number, got 2.7"},
      {R"({"zero_optimization": {"stage": 4}})", "'zero_optimization.stage' must be between 0 and 3, got 4"},
      {R"({"bf16": {"enabled": true}, "fp16": {"enabled": true}})", "'bf16.enabled' and 'fp16.enabled' are both true"},
      {R"({"scheduler": {"type": "OneCycle", "params": {}}})",
       "'scheduler.type' 'OneCycle' is not implemented (WarmupLR, WarmupDecayLR and WarmupCosineLR are)"},
      {R"({"scheduler": {"params": {}}})", "'scheduler.type' is missing"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "cubic"}}})", "'scheduler.params.warmup_type' must be \"log\" or \"linear\""},
      {R"({"train_micro_batch_size_per_gpu": 1e12})", "'train_micro_batch_size_per_gpu' must be between 1 and 2147483647"},
      {R"({"gradient_accumulation_steps": 0})", "'gradient_accumulation_steps' must be between 1 and"},
      {R"({"optimizer": {"type": "AdamW", "params": {"lr": -0.001}}})", "'optimizer.params.lr' must be above 0"},
      {R"({"optimizer": {"type": "AdamW", "params": {"betas": [0.9, 1.5]}}})", "'optimizer.params.betas[1]' must be below 1"},
      {R"({"optimizer": {"type": "Lamb"}})", "'optimizer.type' 'Lamb' is not supported"},
      {R"({"gradient_clipping": "1.0"})", "'gradient_clipping' must be a finite number, got \"1.0\""},
      {R"({"fp16": {"enabled": true, "loss_scale": 128}})", "'fp16.loss_scale' a static loss scale is not supported"},
      {R"({"bf16": {"enabled": "yes"}})", "'bf16.enabled' must be true or false"},
  };
  for (const auto& [json, want] : cases) {
    const std::string got = ds_error_of(json);
    EXPECT_NE(got.find(want), std::string::npos) << json << "\n  gave: " << got;
  }
}

TEST(DeepSpeedConfig, SchedulersMapAsDeepSpeedDefinesThem) {
  TrainConfig cfg;
  parse(R"({"optimizer": {"type": "AdamW", "params": {"lr": 0.0002}},
            "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 7, "total_num_steps": 100,
                                                              "warmup_min_lr": 1e-5, "warmup_type": "linear"}}})", cfg);
  EXPECT_EQ(cfg.schedule.shape, LrShape::ds_warmup_decay);
  EXPECT_FLOAT_EQ(cfg.schedule.lr, 1e-3f);  // WarmupDecayLR's peak is warmup_max_lr (default 0.001), not the optimizer's lr
  EXPECT_FLOAT_EQ(cfg.schedule.warmup_min_lr, 1e-5f);
  EXPECT_EQ(cfg.schedule.warmup, 7);
  EXPECT_EQ(cfg.schedule.total, 100);
  EXPECT_FALSE(cfg.schedule.log_warmup);

  TrainConfig c2;
  parse(R"({"optimizer": {"type": "AdamW", "params": {"lr": 0.0002}},
            "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 50, "warmup_min_ratio": 0.1, "cos_min_ratio": 0.01}}})", c2);
  EXPECT_EQ(c2.schedule.shape, LrShape::ds_warmup_cosine);
  EXPECT_FLOAT_EQ(c2.schedule.lr, 2e-4f);  // WarmupCosineLR scales the optimizer's lr
  EXPECT_EQ(c2.schedule.warmup, 1000);     // DeepSpeed's default
  EXPECT_FLOAT_EQ(c2.schedule.warmup_min_ratio, 0.1f);
  EXPECT_FLOAT_EQ(c2.schedule.cos_min_ratio, 0.01f);
  EXPECT_TRUE(c2.schedule.log_warmup);

  TrainConfig c3;
  parse(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 0.003, "warmup_num_steps": 20}}})", c3);
  EXPECT_EQ(c3.schedule.shape, LrShape::ds_warmup);
  EXPECT_FLOAT_EQ(c3.schedule.at(20), 3e-3f);
}

TEST(DeepSpeedConfig, AutoValuesKeepTierzerosAndAreListed) {
  TrainConfig cfg;
  cfg.micro_batch = 3, cfg.schedule.lr = 5e-4f, cfg.schedule.warmup = 20, cfg.grad_clip = 0.7f;
  const DeepSpeedMapping m = parse(R"({"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto",
      "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}},
      "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": "auto", "warmup_num_steps": "auto", "warmup_min_lr": "auto"}},
      "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3}})", cfg);
  EXPECT_EQ(cfg.micro_batch, 3);
  EXPECT_FLOAT_EQ(cfg.grad_clip, 0.7f);
  EXPECT_FLOAT_EQ(cfg.schedule.lr, 5e-4f);
  EXPECT_EQ(cfg.schedule.warmup, 20);
  EXPECT_EQ(cfg.schedule.shape, LrShape::ds_warmup);
  std::vector<std::string> listed = m.auto_keys;
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, (std::vector<std::string>{"bf16.enabled", "gradient_clipping", "optimizer.params.lr", "optimizer.params.weight_decay",
                                              "scheduler.params.warmup_max_lr", "scheduler.params.warmup_min_lr",
                                              "scheduler.params.warmup_num_steps", "train_micro_batch_size_per_gpu"}));
}

// DeepSpeed's batch rule (deepspeed/runtime/config.py): two of the three
// keys give the third, train_batch_size alone means accumulation 1, and the
// three must agree; a flag counts as given.
TEST(DeepSpeedConfig, TheBatchFollowsDeepSpeedsRule) {
  struct Case {
    const char* json;
    int ranks;
    std::optional<std::int64_t> flag_micro;
    int micro, accum;
  };
  const Case cases[] = {
      {R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2})", 8, {}, 4, 2},
      {R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4})", 8, {}, 4, 2},
      {R"({"train_batch_size": 64, "gradient_accumulation_steps": 2})", 8, {}, 4, 2},
      {R"({"train_batch_size": 64})", 8, {}, 8, 1},
      {R"({"train_batch_size": 64})", 8, 2, 2, 4},  // --micro-batch 2: accumulation derived
      {R"({"train_micro_batch_size_per_gpu": 4})", 8, {}, 4, 1},
      {R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 3})", 5, {}, 4, 3},
  };
  for (const Case& c : cases) {
    TrainConfig cfg;
    DeepSpeedMapping m = parse(c.json, cfg);
    if (c.flag_micro) m.micro_batch = c.flag_micro, cfg.micro_batch = static_cast<int>(*c.flag_micro);
    finish_deepspeed_run(m, "ds.json", cfg, c.ranks);
    EXPECT_EQ(cfg.micro_batch, c.micro) << c.json;
    EXPECT_EQ(cfg.grad_accum, c.accum) << c.json;
  }
  // Neither train_batch_size nor a micro batch (DeepSpeed refuses it): tierzero's own.
  TrainConfig own;
  own.micro_batch = 3;
  finish_deepspeed_run(parse(R"({"gradient_accumulation_steps": 2})", own), "ds.json", own, 8);
  EXPECT_EQ(own.micro_batch, 3);
  EXPECT_EQ(own.grad_accum, 2);
  const auto batch_error = [](const char* json, int ranks) {
    TrainConfig cfg;
    try {
      finish_deepspeed_run(parse(json, cfg), "ds.json", cfg, ranks);
    } catch (const ConfigError& e) {
      return e.message();
    }
    return std::string();
  };
  EXPECT_EQ(batch_error(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2})", 4),
            "ds.json: 'train_batch_size' is 64 but micro batch 4 x accumulation 2 x 4 ranks is 32");
  EXPECT_EQ(batch_error(R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4})", 8),
            "ds.json: 'train_batch_size' 10 leaves no whole micro batch and accumulation on 8 ranks");
  EXPECT_EQ(batch_error(R"({"train_batch_size": 20, "gradient_accumulation_steps": 2})", 8),
            "ds.json: 'train_batch_size' is 20 but micro batch 1 x accumulation 2 x 8 ranks is 16");
}

// A key the config leaves out takes DeepSpeed's default, not tierzero's:
// no clipping, Adam's betas, eps and weight decay, fp32 parameters, a
// constant rate, the optimizer's lr 0.001 in an optimizer section.
TEST(DeepSpeedConfig, LeftOutKeysTakeDeepSpeedsDefaults) {
  TrainConfig cfg;  // tierzero's own: clipping 1, betas (0.9, 0.95), weight decay 0.1, bf16, warmup then cosine
  ASSERT_GT(cfg.grad_clip, 0.0f);
  const float tierzero_lr = cfg.schedule.lr;
  parse(R"({"zero_optimization": {"stage": 3}})", cfg);
  EXPECT_EQ(cfg.grad_clip, 0.0f);
  EXPECT_EQ(cfg.adamw.beta1, 0.9f);
  EXPECT_EQ(cfg.adamw.beta2, 0.999f);
  EXPECT_EQ(cfg.adamw.eps, 1e-8f);
  EXPECT_EQ(cfg.adamw.weight_decay, 0.0f);
  EXPECT_EQ(cfg.param_dtype, DType::f32);
  EXPECT_EQ(cfg.grad_accum, 1);
  cfg.steps = 100;
  for (std::int64_t s : {0, 1, 50, 99}) EXPECT_EQ(cfg.schedule.at(s), tierzero_lr) << "no scheduler section: a constant rate, step " << s;

  TrainConfig opt;
  parse(R"({"optimizer": {"type": "AdamW"}, "bf16": {"enabled": true}})", opt);
  EXPECT_EQ(opt.schedule.lr, 1e-3f);  // FusedAdam's lr
  EXPECT_EQ(opt.param_dtype, DType::bf16);
  TrainConfig torch;
  parse(R"({"optimizer": {"type": "AdamW", "params": {"torch_adam": true}}})", torch);
  EXPECT_EQ(torch.adamw.weight_decay, 0.01f);  // torch.optim.AdamW's
  TrainConfig kept;
  parse(R"({"bf16": {"enabled": "auto"}})", kept);
  EXPECT_EQ(kept.param_dtype, DType::bf16) << "\"auto\" keeps tierzero's";
  // WarmupLR without warmup_max_lr peaks at the optimizer's lr; WarmupDecayLR at 0.001.
  TrainConfig warm;
  parse(R"({"optimizer": {"type": "Adam", "params": {"lr": 2e-4}}, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}})", warm);
  EXPECT_FLOAT_EQ(warm.schedule.at(50), 2e-4f);
  TrainConfig decay;
  parse(R"({"optimizer": {"type": "Adam", "params": {"lr": 2e-4}}, "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 10}}})", decay);
  EXPECT_FLOAT_EQ(decay.schedule.lr, 1e-3f);
  // NVMe buffers: offload_optimizer's 4, offload_param's 5.
  TrainConfig nvme;
  const DeepSpeedMapping m = parse(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/a"},
      "offload_param": {"device": "nvme", "nvme_path": "/b"}}})", nvme);
  EXPECT_EQ(m.plan.optim_offload.buffers, 4);
  EXPECT_EQ(m.plan.param_offload.buffers, 5);
}

// Between the defaults and the config's keys a --config TOML file's keys
// apply: they win over DeepSpeed's defaults, and lose to the config's keys.
TEST(DeepSpeedConfig, ATomlFileSitsBetweenTheDefaultsAndTheKeys) {
  const DeepSpeedConfig ds(R"({"gradient_clipping": 0.5, "optimizer": {"type": "AdamW", "params": {"betas": [0.8, 0.9]}}})", "ds.json");
  TrainConfig cfg;
  ds.apply_defaults(cfg);
  parse_train_config("weight_decay = 0.05\ngrad_clip = 2.0\nbeta1 = 0.5\n", "run.toml", cfg);
  ds.apply(kTopo, cfg);
  EXPECT_EQ(cfg.adamw.weight_decay, 0.05f);  // the TOML file's, not DeepSpeed's 0
  EXPECT_EQ(cfg.grad_clip, 0.5f);            // the config's, not the TOML file's
  EXPECT_EQ(cfg.adamw.beta1, 0.8f);
  EXPECT_EQ(cfg.adamw.eps, 1e-8f);           // DeepSpeed's
}

// The scheduler's total_num_steps is the run's length (flags may change it,
// which is said); a warmup longer than the run is a warning.
TEST(DeepSpeedConfig, TotalNumStepsIsTheRunsLength) {
  TrainConfig cfg;
  const DeepSpeedMapping m = parse(R"({"train_micro_batch_size_per_gpu": 2,
      "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 40, "warmup_num_steps": 5}}})", cfg);
  EXPECT_EQ(cfg.steps, 40);
  EXPECT_EQ(m.total_num_steps, std::optional<std::int64_t>(40));
  std::vector<std::string> notes = finish_deepspeed_run(m, "ds.json", cfg, 8);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("40 steps (scheduler.params.total_num_steps), micro batch 2 x accumulation 1 x 8 ranks, AdamW peak lr 0.001 "
                          "betas (0.9, 0.999) eps 1e-08 weight decay 0, gradient clipping off, fp32 parameters"),
            std::string::npos)
      << notes[0];
  TrainConfig longer;
  const DeepSpeedMapping w = parse(R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 40}}})", longer);
  notes = finish_deepspeed_run(w, "ds.json", longer, 8);
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[1], "warning: ds.json: 'scheduler.params.warmup_num_steps' 1000 is longer than the run (40 steps): the learning rate "
                      "never reaches its peak");
  EXPECT_EQ(notes[2], "warning: ds.json: 'scheduler.params.total_num_steps' 40 is less than warmup_num_steps 1000");
  TrainConfig flagged;
  const DeepSpeedMapping f = parse(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 30}}})", flagged);
  flagged.steps = 10;  // --steps
  notes = finish_deepspeed_run(f, "ds.json", flagged, 8);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[1].find("'scheduler.params.warmup_num_steps' 30 is longer than the run (10 steps)"), std::string::npos) << notes[1];
}

TEST(DeepSpeedConfig, Fp16LossScalingKeys) {
  TrainConfig cfg;
  parse(R"({"fp16": {"enabled": true, "initial_scale_power": 12, "loss_scale_window": 200, "loss_scale": 0}})", cfg);
  EXPECT_EQ(cfg.param_dtype, DType::f16);
  EXPECT_EQ(cfg.loss_scale_power, 12);
  EXPECT_EQ(cfg.loss_scale_window, 200);
}

// offload_optimizer maps onto where the plan keeps the optimizer state; the
// tuning keys tierzero has no use for are listed as ignored, with the reason.
TEST(DeepSpeedConfig, OffloadOptimizerSetsWhereTheStateLives) {
  TrainConfig cfg;
  const DeepSpeedMapping cpu = parse(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true}}})", cfg);
  EXPECT_EQ(cpu.plan.optim_offload.device, Offload::cpu);
  EXPECT_EQ(cpu.plan.param_offload.device, Offload::none);
  EXPECT_EQ(cpu.plan.name, "zero3");
  const DeepSpeedMapping nvme = parse(R"({"zero_optimization": {"stage": 2, "offload_optimizer":
      {"device": "nvme", "nvme_path": "/local_nvme", "buffer_count": 4, "fast_init": false}}})", cfg);
  EXPECT_EQ(nvme.plan.optim_offload.device, Offload::nvme);
  EXPECT_EQ(nvme.plan.optim_offload.nvme_path, "/local_nvme");
  EXPECT_EQ(nvme.plan.optim_offload.buffers, 4);
  const auto listed = [&](const std::string& key) {
    return std::any_of(nvme.ignored.begin(), nvme.ignored.end(), [&](const std::string& k) { return k.rfind(key + " (", 0) == 0; });
  };
  EXPECT_TRUE(listed("zero_optimization.offload_optimizer.fast_init")) << "with its reason";
  EXPECT_EQ(parse(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "none"}}})", cfg).plan.optim_offload.device, Offload::none);
  EXPECT_EQ(parse(R"({"zero_optimization": {"stage": 3}})", cfg).plan.optim_offload.device, Offload::none);
  EXPECT_EQ(ds_error_of(R"({"zero_optimization": {"offload_optimizer": {"device": "gpu"}}})"),
            "ds.json: 'zero_optimization.offload_optimizer.device' must be \"none\", \"cpu\" or \"nvme\", got \"gpu\"");
  EXPECT_EQ(ds_error_of(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme"}}})"),
            "ds.json: 'zero_optimization.offload_optimizer.nvme_path' is needed with device \"nvme\"");
  EXPECT_EQ(ds_error_of(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme", "nvme_path": "/x", "buffer_count": 1}}})"),
            "ds.json: 'zero_optimization.offload_optimizer.buffer_count' must be between 2 and 64, got 1");
  EXPECT_EQ(ds_error_of(R"({"zero_optimization": {"offload_optimizer": "cpu"}})"),
            "ds.json: 'zero_optimization.offload_optimizer' must be a JSON object, got \"cpu\"");
}

// offload_param maps onto where the plan keeps the parameter shards, at
// stage 3 only (as DeepSpeed); its own nvme_path and buffer_count;
// buffer_size and max_in_cpu are listed as ignored, with the reason.
TEST(DeepSpeedConfig, OffloadParamSetsWhereTheParametersLive) {
  TrainConfig cfg;
  const DeepSpeedMapping both = parse(R"({"zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme_a"},
      "offload_param": {"device": "nvme", "nvme_path": "/nvme_b", "buffer_count": 5, "buffer_size": 100000000,
                        "max_in_cpu": 1000000000, "pin_memory": true}}})", cfg);
  EXPECT_EQ(both.plan.param_offload.device, Offload::nvme);
  EXPECT_EQ(both.plan.param_offload.nvme_path, "/nvme_b");
  EXPECT_EQ(both.plan.param_offload.buffers, 5);
  EXPECT_EQ(both.plan.optim_offload.nvme_path, "/nvme_a");
  EXPECT_EQ(both.plan.optim_offload.buffers, 4) << "each section has its own buffers (DeepSpeed's default 4 here)";
  for (const char* key : {"zero_optimization.offload_param.buffer_size", "zero_optimization.offload_param.max_in_cpu"})
    EXPECT_TRUE(std::any_of(both.ignored.begin(), both.ignored.end(), [&](const std::string& k) { return k.rfind(std::string(key) + " (", 0) == 0; }))
        << key << " listed with its reason";
  EXPECT_EQ(both.ignored.size(), 2u);
  const DeepSpeedMapping cpu = parse(R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 2, "offload_param": {"device": "cpu"}}})", cfg);
  EXPECT_EQ(cpu.plan.param_offload.device, Offload::cpu);
  EXPECT_EQ(cpu.plan.name, "zeropp");
  const DeepSpeedMapping none = parse(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "none", "pin_memory": true}}})", cfg);
  EXPECT_EQ(none.plan.param_offload.device, Offload::none);
  EXPECT_TRUE(none.ignored.empty()) << none.ignored.front();
  EXPECT_EQ(parse(R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "none"}}})", cfg).plan.param_offload.device, Offload::none);
  EXPECT_EQ(ds_error_of(R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}})"),
            "ds.json: 'zero_optimization.offload_param.device' offloads partitioned parameters and needs stage 3, but stage is 2");
  EXPECT_EQ(ds_error_of(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}})"),
            "ds.json: 'zero_optimization.offload_param.nvme_path' is needed with device \"nvme\"");
  EXPECT_EQ(ds_error_of(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "disk"}}})"),
            "ds.json: 'zero_optimization.offload_param.device' must be \"none\", \"cpu\" or \"nvme\", got \"disk\"");
}

// stage3_param_persistence_threshold is the plan's persist_threshold: DeepSpeed's
// 1e5 when a stage-3 config leaves it out, tierzero's 0 for "auto" and below stage 3.
TEST(DeepSpeedConfig, PersistenceThresholdKeepsSmallUnitsWhole) {
  TrainConfig cfg;
  EXPECT_EQ(parse(R"({"zero_optimization": {"stage": 3}})", cfg).plan.persist_threshold, 100000u);
  const DeepSpeedMapping set = parse(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 4096}})", cfg);
  EXPECT_EQ(set.plan.persist_threshold, 4096u);
  EXPECT_TRUE(set.ignored.empty()) << set.ignored.front();
  const DeepSpeedMapping hpz = parse(R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 4, "stage3_param_persistence_threshold": 0}})", cfg);
  EXPECT_EQ(hpz.plan.name, "zeropp");
  EXPECT_EQ(hpz.plan.persist_threshold, 0u);
  const DeepSpeedMapping automatic = parse(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": "auto"}})", cfg);
  EXPECT_EQ(automatic.plan.persist_threshold, 0u);
  EXPECT_EQ(automatic.auto_keys, std::vector<std::string>{"zero_optimization.stage3_param_persistence_threshold"});
  EXPECT_EQ(parse(R"({"zero_optimization": {"stage": 2}})", cfg).plan.persist_threshold, 0u) << "params are not partitioned";
  EXPECT_EQ(ds_error_of(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": -1}})"),
            "ds.json: 'zero_optimization.stage3_param_persistence_threshold' must be between 0 and 9223372036854775807, got -1");
  EXPECT_EQ(parse(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 1.5e4}})", cfg).plan.persist_threshold, 15000u);
  EXPECT_EQ(ds_error_of(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100.5}})"),
            "ds.json: 'zero_optimization.stage3_param_persistence_threshold' must be a whole number, got 100.5");
  const DeepSpeedMapping capped = parse(R"({"zero_optimization": {"stage": 3, "stage3_model_persistence_threshold": 1e6}})", cfg);
  ASSERT_EQ(capped.ignored.size(), 1u);
  EXPECT_EQ(capped.ignored[0].rfind("zero_optimization.stage3_model_persistence_threshold (", 0), 0u) << capped.ignored[0];
}

// DeepSpeed's monitors: the folder is output_path/job_name (its defaults ""
// and "DeepSpeedJobName"), nothing when disabled, and their other keys
// (wandb's, comet's) listed as ignored.
TEST(DeepSpeedConfig, MonitorsNameTheirFolders) {
  TrainConfig cfg;
  const DeepSpeedMapping both = parse(R"({"tensorboard": {"enabled": true, "output_path": "runs/", "job_name": "gpt"},
                                          "csv_monitor": {"enabled": true, "output_path": "csv"}})", cfg);
  EXPECT_EQ(both.tensorboard_dir, "runs/gpt");
  EXPECT_EQ(both.csv_monitor_dir, "csv/DeepSpeedJobName");
  EXPECT_TRUE(both.ignored.empty()) << both.ignored.front();
  EXPECT_EQ(parse(R"({"tensorboard": {"enabled": true}})", cfg).tensorboard_dir, "DeepSpeedJobName");
  const DeepSpeedMapping off = parse(R"({"tensorboard": {"enabled": false, "output_path": "runs"}, "wandb": {"enabled": true}})", cfg);
  EXPECT_EQ(off.tensorboard_dir, "");
  EXPECT_EQ(off.csv_monitor_dir, "");
  EXPECT_EQ(off.ignored, std::vector<std::string>{"wandb"});
  EXPECT_EQ(parse(R"({"tensorboard": {"enabled": true, "team": "x"}})", cfg).ignored, std::vector<std::string>{"tensorboard.team"});
  EXPECT_EQ(ds_error_of(R"({"tensorboard": {"enabled": "yes"}})"), "ds.json: 'tensorboard.enabled' must be true or false, got \"yes\"");
  EXPECT_EQ(ds_error_of(R"({"csv_monitor": {"enabled": true, "output_path": 3}})"), "ds.json: 'csv_monitor.output_path' must be a string, got 3");
  EXPECT_EQ(ds_error_of(R"({"tensorboard": {"enabled": true, "job_name": "a/b"}})"),
            "ds.json: 'tensorboard.job_name' must be a folder name, got \"a/b\"");
}

// tensor_parallel.autotp_size is the mesh's degree (read before the plan's
// topology is known); its section's other keys are ignored and listed.
TEST(DeepSpeedConfig, AutoTpSizeIsTheTensorParallelDegree) {
  EXPECT_EQ(DeepSpeedConfig(R"({"zero_optimization": {"stage": 2}})", "ds.json").tensor_parallel_size(), 1);
  EXPECT_EQ(DeepSpeedConfig(R"({"tensor_parallel": {"autotp_size": 4}})", "ds.json").tensor_parallel_size(), 4);
  for (const char* bad : {R"({"tensor_parallel": {"autotp_size": 0}})", R"({"tensor_parallel": {"autotp_size": 1.5}})"}) {
    try {
      DeepSpeedConfig(bad, "ds.json").tensor_parallel_size();
      FAIL() << "accepted " << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.message().rfind("ds.json: 'tensor_parallel.autotp_size' must be", 0), 0u) << e.what();
    }
  }
  EXPECT_NE(ds_error_of(R"({"tensor_parallel": {"autotp_size": -2}})").find("'tensor_parallel.autotp_size'"), std::string::npos);
  TrainConfig cfg;
  EXPECT_EQ(parse(R"({"tensor_parallel": {"autotp_size": 2, "tp_overlap_comm": true}})", cfg).ignored,
            std::vector<std::string>{"tensor_parallel.tp_overlap_comm"});
}

// A config that gives each key of deepspeed_keys() (for a refused key, a
// value it refuses), with what it needs beside it.
const std::map<std::string, std::string>& key_examples() {
  static const std::map<std::string, std::string> examples = {
      {"train_batch_size", R"({"train_batch_size": 64})"},
      {"train_micro_batch_size_per_gpu", R"({"train_micro_batch_size_per_gpu": 2})"},
      {"gradient_accumulation_steps", R"({"gradient_accumulation_steps": 2})"},
      {"gradient_clipping", R"({"gradient_clipping": 1.0})"},
      {"optimizer.type", R"({"optimizer": {"type": "Adam"}})"},
      {"optimizer.params.lr", R"({"optimizer": {"type": "AdamW", "params": {"lr": 3e-4}}})"},
      {"optimizer.params.betas", R"({"optimizer": {"type": "AdamW", "params": {"betas": [0.9, 0.95]}}})"},
      {"optimizer.params.eps", R"({"optimizer": {"type": "AdamW", "params": {"eps": 1e-6}}})"},
      {"optimizer.params.weight_decay", R"({"optimizer": {"type": "AdamW", "params": {"weight_decay": 0.1}}})"},
      {"optimizer.params.torch_adam", R"({"optimizer": {"type": "AdamW", "params": {"torch_adam": true}}})"},
      {"optimizer.params.adam_w_mode", R"({"optimizer": {"type": "Adam", "params": {"adam_w_mode": false}}})"},
      {"optimizer.params.bias_correction", R"({"optimizer": {"type": "Adam", "params": {"bias_correction": false}}})"},
      {"optimizer.params.amsgrad", R"({"optimizer": {"type": "Adam", "params": {"amsgrad": true}}})"},
      {"scheduler.type", R"({"scheduler": {"type": "WarmupLR"}})"},
      {"scheduler.params.warmup_min_lr", R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 1e-5}}})"},
      {"scheduler.params.warmup_max_lr", R"({"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_max_lr": 2e-3}}})"},
      {"scheduler.params.warmup_num_steps", R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}})"},
      {"scheduler.params.warmup_type", R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "linear"}}})"},
      {"scheduler.params.total_num_steps", R"({"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 100}}})"},
      {"scheduler.params.warmup_min_ratio", R"({"scheduler": {"type": "WarmupCosineLR", "params": {"warmup_min_ratio": 0.1}}})"},
      {"scheduler.params.cos_min_ratio", R"({"scheduler": {"type": "WarmupCosineLR", "params": {"cos_min_ratio": 0.01}}})"},
      {"bf16.enabled", R"({"bf16": {"enabled": true}})"},
      {"fp16.enabled", R"({"fp16": {"enabled": true}})"},
      {"fp16.initial_scale_power", R"({"fp16": {"enabled": true, "initial_scale_power": 12}})"},
      {"fp16.loss_scale_window", R"({"fp16": {"enabled": true, "loss_scale_window": 200}})"},
      {"fp16.loss_scale", R"({"fp16": {"enabled": true, "loss_scale": 128}})"},
      {"fp16.hysteresis", R"({"fp16": {"enabled": true, "hysteresis": 2}})"},
      {"fp16.consecutive_hysteresis", R"({"fp16": {"enabled": true, "consecutive_hysteresis": false}})"},
      {"fp16.min_loss_scale", R"({"fp16": {"enabled": true, "min_loss_scale": 1}})"},
      {"fp16.auto_cast", R"({"fp16": {"enabled": true, "auto_cast": false}})"},
      {"communication_data_type", R"({"communication_data_type": "fp32"})"},
      {"prescale_gradients", R"({"prescale_gradients": true})"},
      {"gradient_predivide_factor", R"({"gradient_predivide_factor": 2.0})"},
      {"zero_optimization.stage", R"({"zero_optimization": {"stage": 2}})"},
      {"zero_optimization.zero_hpz_partition_size", R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 2}})"},
      {"zero_optimization.zero_quantized_weights", R"({"zero_optimization": {"stage": 3, "zero_quantized_weights": true}})"},
      {"zero_optimization.zero_quantized_gradients", R"({"zero_optimization": {"stage": 3, "zero_quantized_gradients": true}})"},
      {"zero_optimization.reduce_bucket_size", R"({"zero_optimization": {"stage": 3, "reduce_bucket_size": 500000}})"},
      {"zero_optimization.overlap_comm", R"({"zero_optimization": {"stage": 3, "overlap_comm": true}})"},
      {"zero_optimization.stage3_param_persistence_threshold", R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 1000}})"},
      {"zero_optimization.offload_optimizer.device", R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}})"},
      {"zero_optimization.offload_optimizer.nvme_path",
       R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}})"},
      {"zero_optimization.offload_optimizer.buffer_count", R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"buffer_count": 3}}})"},
      {"zero_optimization.offload_optimizer.pin_memory", R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"pin_memory": true}}})"},
      {"zero_optimization.offload_optimizer.fast_init", R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"fast_init": true}}})"},
      {"zero_optimization.offload_optimizer.buffer_size", R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"buffer_size": 1e8}}})"},
      {"zero_optimization.offload_optimizer.ratio", R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"ratio": 0.5}}})"},
      {"zero_optimization.offload_param.device", R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}})"},
      {"zero_optimization.offload_param.nvme_path",
       R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme"}}})"},
      {"zero_optimization.offload_param.buffer_count", R"({"zero_optimization": {"stage": 3, "offload_param": {"buffer_count": 3}}})"},
      {"zero_optimization.offload_param.pin_memory", R"({"zero_optimization": {"stage": 3, "offload_param": {"pin_memory": true}}})"},
      {"zero_optimization.offload_param.buffer_size", R"({"zero_optimization": {"stage": 3, "offload_param": {"buffer_size": 1e8}}})"},
      {"zero_optimization.offload_param.max_in_cpu", R"({"zero_optimization": {"stage": 3, "offload_param": {"max_in_cpu": 1e9}}})"},
      {"zero_optimization.stage3_prefetch_bucket_size", R"({"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 5e7}})"},
      {"zero_optimization.stage3_model_persistence_threshold", R"({"zero_optimization": {"stage": 3, "stage3_model_persistence_threshold": 1e6}})"},
      {"zero_optimization.stage3_max_live_parameters", R"({"zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1e9}})"},
      {"zero_optimization.stage3_max_reuse_distance", R"({"zero_optimization": {"stage": 3, "stage3_max_reuse_distance": 1e9}})"},
      {"zero_optimization.stage3_gather_16bit_weights_on_model_save",
       R"({"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": true}})"},
      {"zero_optimization.allgather_bucket_size", R"({"zero_optimization": {"stage": 2, "allgather_bucket_size": 5e8}})"},
      {"zero_optimization.allgather_partitions", R"({"zero_optimization": {"stage": 2, "allgather_partitions": true}})"},
      {"zero_optimization.reduce_scatter", R"({"zero_optimization": {"stage": 2, "reduce_scatter": true}})"},
      {"zero_optimization.contiguous_gradients", R"({"zero_optimization": {"stage": 2, "contiguous_gradients": true}})"},
      {"zero_optimization.round_robin_gradients", R"({"zero_optimization": {"stage": 2, "round_robin_gradients": true}})"},
      {"zero_optimization.sub_group_size", R"({"zero_optimization": {"stage": 3, "sub_group_size": 1e9}})"},
      {"tensor_parallel.autotp_size", R"({"tensor_parallel": {"autotp_size": 2}})"},
      {"wall_clock_breakdown", R"({"wall_clock_breakdown": true})"},
      {"steps_per_print", R"({"steps_per_print": 100})"},
      {"zero_allow_untested_optimizer", R"({"zero_allow_untested_optimizer": true})"},
      {"activation_checkpointing", R"({"activation_checkpointing": {"partition_activations": true}})"},
      {"flops_profiler", R"({"flops_profiler": {"enabled": false}})"},
      {"tensorboard.enabled", R"({"tensorboard": {"enabled": true}})"},
      {"tensorboard.output_path", R"({"tensorboard": {"enabled": true, "output_path": "tb/"}})"},
      {"tensorboard.job_name", R"({"tensorboard": {"enabled": true, "job_name": "gpt"}})"},
      {"csv_monitor.enabled", R"({"csv_monitor": {"enabled": true}})"},
      {"csv_monitor.output_path", R"({"csv_monitor": {"enabled": true, "output_path": "csv/"}})"},
      {"csv_monitor.job_name", R"({"csv_monitor": {"enabled": true, "job_name": "gpt"}})"},
  };
  return examples;
}

// Every key does what the table says: taken keys are not listed as
// ignored, ignored ones are (with the table's reason), refused ones are an
// error naming the key. The examples name exactly the table's keys.
TEST(DeepSpeedKeys, EveryKeyDoesWhatTheTableSays) {
  std::set<std::string> named;
  for (const DeepSpeedKey& k : deepspeed_keys()) {
    const std::string path(k.path);
    EXPECT_TRUE(named.insert(path).second) << path << " twice in the table";
    const auto it = key_examples().find(path);
    ASSERT_NE(it, key_examples().end()) << "no example config for " << path;
    if (k.use == DeepSpeedUse::refused) {
      EXPECT_NE(ds_error_of(it->second).find("ds.json: '" + path + "'"), std::string::npos) << path << ": " << ds_error_of(it->second);
      continue;
    }
    TrainConfig cfg;
    const DeepSpeedMapping m = parse(it->second, cfg);
    const std::string reason = path + (k.note.empty() ? "" : " (" + std::string(k.note) + ")");
    const bool listed = std::find(m.ignored.begin(), m.ignored.end(), reason) != m.ignored.end();
    EXPECT_EQ(listed, k.use == DeepSpeedUse::ignored) << path << " in " << it->second;
    EXPECT_EQ(m.ignored.size(), k.use == DeepSpeedUse::ignored ? 1u : 0u) << path << ": " << (m.ignored.empty() ? "" : m.ignored[0]);
  }
  EXPECT_EQ(named.size(), key_examples().size()) << "an example names a key the table does not";
  // A key the table does not name is ignored, without a reason.
  TrainConfig cfg;
  EXPECT_EQ(parse(R"({"zero_optimization": {"stage": 3, "nosuch_key": 1}})", cfg).ignored,
            std::vector<std::string>{"zero_optimization.nosuch_key"});
}

// docs/deepspeed.md's key table is the parser's, row for row.
TEST(DeepSpeedKeys, TheDocsListExactlyTheTable) {
  std::ifstream in(std::filesystem::path(TZ_DOCS_DIR) / "deepspeed.md");
  ASSERT_TRUE(in) << "no docs/deepspeed.md";
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("| `", 0) == 0) rows.push_back(line);
  std::vector<std::string> want;
  for (const DeepSpeedKey& k : deepspeed_keys())
    want.push_back("| `" + std::string(k.path) + "` | " + std::string(deepspeed_use_name(k.use)) + " | " + std::string(k.deepspeed_default) +
                   " | " + std::string(k.note) + " |");
  EXPECT_EQ(rows.size(), want.size());
  for (std::size_t i = 0; i < std::max(rows.size(), want.size()); ++i)
    EXPECT_EQ(i < rows.size() ? rows[i] : "(none)", i < want.size() ? want[i] : "(none)") << "row " << i + 1;
}

}  // namespace
}  // namespace tierzero
