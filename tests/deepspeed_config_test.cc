// DeepSpeed JSON configs (tierzero/deepspeed_config.h): the schedulers and
// precision keys map as DeepSpeed defines them, "auto" keeps tierzero's
// values, and every bad value is an error naming the file and the key.
#include <gtest/gtest.h>

#include <algorithm>

#include "tierzero/deepspeed_config.h"
#include "tierzero/error.h"

namespace tierzero {
namespace {

const Topology kTopo = Topology::parse("package=2,node=2,world=2", 8);

DeepSpeedMapping parse(const std::string& json, TrainConfig& cfg) { return parse_deepspeed_config(json, "ds.json", kTopo, cfg); }

std::string error_of(const std::string& json) {
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
    const std::string got = error_of(json);
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
  EXPECT_FLOAT_EQ(c3.schedule.at(19), 3e-3f);
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

TEST(DeepSpeedConfig, TrainBatchSizeMustMatchTheRun) {
  TrainConfig cfg;
  const DeepSpeedMapping m = parse(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2})", cfg);
  EXPECT_NO_THROW(check_train_batch_size(m, "ds.json", cfg, 8));
  try {
    check_train_batch_size(m, "ds.json", cfg, 4);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("ds.json: 'train_batch_size' is 64 but micro batch 4 x accumulation 2 x 4 ranks is 32"), std::string::npos)
        << e.message();
  }
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
  EXPECT_EQ(error_of(R"({"zero_optimization": {"offload_optimizer": {"device": "gpu"}}})"),
            "ds.json: 'zero_optimization.offload_optimizer.device' must be \"none\", \"cpu\" or \"nvme\", got \"gpu\"");
  EXPECT_EQ(error_of(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme"}}})"),
            "ds.json: 'zero_optimization.offload_optimizer.nvme_path' is needed with device \"nvme\"");
  EXPECT_EQ(error_of(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme", "nvme_path": "/x", "buffer_count": 1}}})"),
            "ds.json: 'zero_optimization.offload_optimizer.buffer_count' must be between 2 and 64, got 1");
  EXPECT_EQ(error_of(R"({"zero_optimization": {"offload_optimizer": "cpu"}})"),
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
  EXPECT_EQ(both.plan.optim_offload.buffers, 2) << "each section has its own buffers";
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
  EXPECT_EQ(error_of(R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}})"),
            "ds.json: 'zero_optimization.offload_param.device' offloads partitioned parameters and needs stage 3, but stage is 2");
  EXPECT_EQ(error_of(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}})"),
            "ds.json: 'zero_optimization.offload_param.nvme_path' is needed with device \"nvme\"");
  EXPECT_EQ(error_of(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "disk"}}})"),
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
  EXPECT_EQ(error_of(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": -1}})"),
            "ds.json: 'zero_optimization.stage3_param_persistence_threshold' must be between 0 and 9223372036854775807, got -1");
  EXPECT_EQ(parse(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 1.5e4}})", cfg).plan.persist_threshold, 15000u);
  EXPECT_EQ(error_of(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100.5}})"),
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
  EXPECT_EQ(error_of(R"({"tensorboard": {"enabled": "yes"}})"), "ds.json: 'tensorboard.enabled' must be true or false, got \"yes\"");
  EXPECT_EQ(error_of(R"({"csv_monitor": {"enabled": true, "output_path": 3}})"), "ds.json: 'csv_monitor.output_path' must be a string, got 3");
  EXPECT_EQ(error_of(R"({"tensorboard": {"enabled": true, "job_name": "a/b"}})"),
            "ds.json: 'tensorboard.job_name' must be a folder name, got \"a/b\"");
}

}  // namespace
}  // namespace tierzero
