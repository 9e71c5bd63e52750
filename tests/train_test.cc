// Training: configuration errors, the schedule, determinism, and the loss
// on the built-in corpus falling from ~ln(256) below 3.0 in 300 steps.
#include <gtest/gtest.h>

#include <cmath>

#include "tierzero/error.h"
#include "model/gemm.h"
#include "tierzero/trainer.h"

namespace tierzero {
namespace {

void expect_config_error(const std::string& toml, const char* fragment) {
  TrainConfig c;
  try {
    parse_train_config(toml, "run.toml", c);
    FAIL() << "accepted: " << toml;
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find(fragment), std::string::npos) << e.message();
  }
}

TEST(TrainConfig, ValidFile) {
  TrainConfig c;
  parse_train_config("model = 'gpt-mini'\nsteps = 7\nlr = 0.01\nparam_dtype = 'bf16'\nrecompute = true\n", "x", c);
  EXPECT_EQ(c.model.name, "gpt-mini");
  EXPECT_EQ(c.steps, 7);
  EXPECT_FLOAT_EQ(c.schedule.lr, 0.01f);
  EXPECT_EQ(c.param_dtype, DType::bf16);
  EXPECT_TRUE(c.recompute);
  parse_train_config("[model]\npreset = 'gpt-tiny'\nlayers = 3\n", "x", c);
  EXPECT_EQ(c.matmul, MatmulType::automatic);
  parse_train_config("matmul = 'bf16'\n", "x", c);
  EXPECT_EQ(c.matmul, MatmulType::bf16);
  EXPECT_EQ(c.model.layers, 3);
  EXPECT_EQ(c.model.channels, 64);
}

TEST(TrainConfig, Errors) {
  expect_config_error("stepz = 3\n", "unknown key 'stepz'");
  expect_config_error("steps = 'many'\n", "key 'steps' has the wrong type");
  expect_config_error("steps = 0\n", "run.toml: key 'steps' must be at least 1, got 0");
  expect_config_error("model = 'gpt-huge'\n", "unknown model 'gpt-huge'");
  expect_config_error("[model]\nheads = 5\n", "multiple of heads");
  expect_config_error("[model]\nwidth = 5\n", "unknown key 'model.width'");
  expect_config_error("param_dtype = 'int8'\n", "param_dtype must be");
  expect_config_error("seq_len = 100000\n", "seq_len must be between");
  expect_config_error("lr = [\n", "run.toml:1");
  expect_config_error("[adamw]\nbeta1 = 0.9\n", "unknown key 'adamw'");
  expect_config_error("matmul = 'tf32'\n", "run.toml: key 'matmul': unknown matmul type 'tf32'");
  expect_config_error("param_dtype = 'fp8'\n", "run.toml: key 'param_dtype': unknown dtype 'fp8'");
}

TEST(LrSchedule, WarmupThenCosineToFloor) {
  const LrSchedule s{1.0f, 0.1f, 10, 110};
  EXPECT_FLOAT_EQ(s.at(0), 0.1f);
  EXPECT_FLOAT_EQ(s.at(9), 1.0f);
  EXPECT_FLOAT_EQ(s.at(10), 1.0f);
  EXPECT_NEAR(s.at(60), 0.55f, 1e-6);  // halfway down the cosine
  EXPECT_NEAR(s.at(110), 0.1f, 1e-6);
  EXPECT_NEAR(s.at(500), 0.1f, 1e-6);
  EXPECT_FLOAT_EQ(clip_coefficient(4.0, 1.0f), static_cast<float>(1.0 / (4.0 + 1e-6)));
  EXPECT_FLOAT_EQ(clip_coefficient(0.5, 1.0f), 1.0f);
}

// DeepSpeed's WarmupLR, WarmupDecayLR and WarmupCosineLR at points worked
// out by hand from deepspeed/runtime/lr_schedules.py's formulas, step k at
// last_batch_iteration k - 1 (the engine steps the scheduler after the
// optimizer) and step 0 at the constructor's rate.
TEST(LrSchedule, DeepSpeedSchedulersInClosedForm) {
  LrSchedule w;
  w.shape = LrShape::ds_warmup, w.lr = 1e-3f, w.warmup = 10;  // log warmup from 0
  EXPECT_FLOAT_EQ(w.at(0), 0.0f);  // warmup_min_lr, from the constructor
  EXPECT_FLOAT_EQ(w.at(1), 0.0f);  // ln(1) / ln(10)
  EXPECT_FLOAT_EQ(w.at(2), static_cast<float>(1e-3 * std::log(2.0) / std::log(10.0)));
  EXPECT_FLOAT_EQ(w.at(10), 1e-3f);
  EXPECT_FLOAT_EQ(w.at(11), 1e-3f);
  EXPECT_FLOAT_EQ(w.at(100000), 1e-3f);
  w.log_warmup = false, w.warmup_min_lr = 1e-4f;  // linear from 1e-4
  EXPECT_FLOAT_EQ(w.at(0), 1e-4f);
  EXPECT_FLOAT_EQ(w.at(6), 5.5e-4f);
  w.warmup = 1;  // DeepSpeed warms up over at least 2 steps
  EXPECT_FLOAT_EQ(w.at(2), 5.5e-4f);

  LrSchedule d;
  d.shape = LrShape::ds_warmup_decay, d.lr = 1e-3f, d.warmup = 10, d.total = 20;
  EXPECT_FLOAT_EQ(d.at(11), 1e-3f);
  EXPECT_FLOAT_EQ(d.at(16), 5e-4f);
  EXPECT_FLOAT_EQ(d.at(21), 0.0f);
  EXPECT_FLOAT_EQ(d.at(26), 0.0f);

  LrSchedule c;
  c.shape = LrShape::ds_warmup_cosine, c.lr = 1e-3f, c.warmup = 10, c.total = 20;
  c.warmup_min_ratio = 0.1f, c.cos_min_ratio = 1e-4f, c.log_warmup = false;
  EXPECT_FLOAT_EQ(c.at(0), 0.0f);                                                       // the constructor's rate
  EXPECT_FLOAT_EQ(c.at(6), 5.5e-4f);                                                    // 0.1 + 0.5 * 0.9 of the peak
  EXPECT_FLOAT_EQ(c.at(11), static_cast<float>(1e-3 * (1e-4 + 0.9999 * (1 + std::cos(M_PI / 10)) / 2)));  // first decay step
  EXPECT_FLOAT_EQ(c.at(20), 1e-7f);                                                     // cos_min_ratio of the peak
  EXPECT_FLOAT_EQ(c.at(500), 1e-7f);                                                    // and there it stays (progress stops at 1)
}

TrainConfig tiny(std::int64_t steps) {
  TrainConfig c;
  c.model = gpt_preset("gpt-tiny");
  c.steps = steps;
  return c;
}

TEST(LocalTrainer, IsDeterministicForAGivenSeed) {
  const TokenData data = TokenData::builtin();
  TrainConfig a = tiny(3);
  LocalTrainer t1(a, data), t2(a, data);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t1.step().loss, t2.step().loss);
  EXPECT_EQ(t1.master(), t2.master());
}

// A step's number is the count of steps done with it (docs/formats.md, "Step numbers"): 1 for the first.
TEST(LocalTrainer, StepNumbersCountTheStepsDone) {
  const TokenData data = TokenData::builtin();
  LocalTrainer t(tiny(2), data);
  EXPECT_EQ(t.steps_done(), 0);
  EXPECT_EQ(t.step().step, 1);
  EXPECT_EQ(t.steps_done(), 1);
  EXPECT_EQ(t.step().step, 2);
  EXPECT_EQ(t.steps_done(), 2);
}

TEST(LocalTrainer, LossFallsBelowThreeWithin300Steps) {
  const TokenData data = TokenData::builtin();
  LocalTrainer t(tiny(300), data);
  StepStats first = t.step(), last;
  EXPECT_NEAR(first.loss, std::log(256.0), 0.1);
  double best = first.loss;
  while (t.steps_done() < 300) best = std::min(best, (last = t.step()).loss);
  EXPECT_LT(last.loss, 3.0);
  EXPECT_FALSE(last.skipped);
}

// bf16 GEMMs (bf16 inputs, fp32 accumulation) train like fp32 ones: over
// 200 steps on the built-in corpus every 20-step mean of the loss is within
// 1% of the fp32 run's (single steps differ by up to ~3% as the two
// trajectories drift apart, so the curve is compared, not each step).
TEST(LocalTrainer, Bf16MatmulFollowsTheFp32LossCurve) {
  if (!ops::cpu_has_bf16_units()) GTEST_SKIP() << "no bf16 matrix units: " << ops::gemm_info();
  const TokenData data = TokenData::builtin();
  auto curve = [&](MatmulType t) {
    TrainConfig c = tiny(200);
    c.matmul = t;
    LocalTrainer trainer(c, data);
    std::vector<double> losses;
    while (trainer.steps_done() < 200) losses.push_back(trainer.step().loss);
    EXPECT_EQ(ops::matmul(), t);
    return losses;
  };
  const auto fp32 = curve(MatmulType::fp32), bf16 = curve(MatmulType::bf16);
  ASSERT_EQ(fp32.size(), 200u);
  EXPECT_NE(fp32, bf16);  // the bf16 run did compute differently
  for (std::size_t w = 0; w < 200; w += 20) {
    double a = 0, b = 0;
    for (std::size_t i = w; i < w + 20; ++i) a += fp32[i], b += bf16[i];
    EXPECT_NEAR(b / a, 1.0, 0.01) << "steps " << w << " to " << w + 19 << ": fp32 mean " << a / 20 << ", bf16 " << b / 20;
  }
  EXPECT_LT(bf16.back(), 2.6);
}

TEST(LocalTrainer, RejectsDataWithALargerVocabulary) {
  const TokenData big = TokenData::from_tokens(std::vector<std::uint32_t>(1000, 5), 1000, "big");
  EXPECT_THROW(LocalTrainer(tiny(1), big), ConfigError);
}

}  // namespace
}  // namespace tierzero
