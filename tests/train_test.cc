// Training: configuration errors, the schedule, determinism, the loss on
// the built-in corpus falling from ~ln(256) below 3.0 in 300 steps, and
// bf16 GEMMs training like fp32 ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

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

// bf16 GEMMs (bf16 inputs, fp32 accumulation) train like fp32 ones, compared
// where the comparison is not chaotic. gpt-tiny at micro-batch 4 sits on a
// loss plateau near 3.0 and the step at which a run leaves it is chaotic (a
// 2^-9 perturbation moves it by tens of steps: with seed 1234 over 200 steps
// one AMD EPYC left it at step ~120 in fp32 and after 200 in bf16), so a
// step-by-step or window-by-window curve comparison fails on some CPUs with
// a correct bf16 path. Two quantities are stable:
// - the first 10 steps (warmup, before any plateau): the products differ by
//   bf16's rounding only, and the losses by ~1e-5 relative (measured: at
//   most 1.6e-5 over seeds 1234 and 1-5); the check allows 1e-3, and a wrong
//   bf16 path (fp16 bits, a lost transpose, truncation) is off by far more;
// - the mean loss over the last 100 of 600 steps, where every run has left
//   the plateau (measured exits: steps 30-168) and the cosine schedule has
//   decayed: fp32's own seed-to-seed range there is 2.5% (2.229-2.285 over
//   seeds 1234 and 1-5, AMD EPYC family 26; bf16 within 0.75% of fp32 for each
//   seed), and a bf16 run is another trajectory of the same training, so
//   it must land within 3% of fp32's (a run still on the plateau is 30% off).
TEST(LocalTrainer, Bf16MatmulTrainsLikeFp32) {
  if (!ops::cpu_has_bf16_units()) GTEST_SKIP() << "no bf16 matrix units: " << ops::gemm_info();
  const TokenData data = TokenData::builtin();
  constexpr std::int64_t kSteps = 600, kTail = 100, kEarly = 10;
  auto losses = [&](MatmulType t, std::uint64_t seed) {
    TrainConfig c = tiny(kSteps);
    c.matmul = t, c.seed = seed;
    LocalTrainer trainer(c, data);
    std::vector<double> out;
    while (trainer.steps_done() < kSteps) out.push_back(trainer.step().loss);
    EXPECT_EQ(ops::matmul(), t);
    return out;
  };
  auto tail_mean = [&](const std::vector<double>& l) {
    double sum = 0;
    for (std::int64_t i = kSteps - kTail; i < kSteps; ++i) sum += l[i];
    return sum / kTail;
  };
  for (std::uint64_t seed : {1234u, 1u}) {
    const auto fp32 = losses(MatmulType::fp32, seed), bf16 = losses(MatmulType::bf16, seed);
    ASSERT_EQ(fp32.size(), static_cast<std::size_t>(kSteps));
    EXPECT_NE(fp32, bf16) << "seed " << seed << ": the bf16 run computed in fp32";
    for (std::int64_t i = 0; i < kEarly; ++i)
      EXPECT_NEAR(bf16[i] / fp32[i], 1.0, 1e-3) << "seed " << seed << " step " << i << ": fp32 " << fp32[i] << ", bf16 " << bf16[i];
    const double f = tail_mean(fp32), b = tail_mean(bf16);
    EXPECT_NEAR(b / f, 1.0, 0.03) << "seed " << seed << ": mean loss over the last " << kTail << " of " << kSteps
                                  << " steps, fp32 " << f << ", bf16 " << b;
    EXPECT_LT(f, 2.6) << "seed " << seed << ": fp32 did not leave the plateau near 3.0";
  }
}

TEST(LocalTrainer, RejectsDataWithALargerVocabulary) {
  const TokenData big = TokenData::from_tokens(std::vector<std::uint32_t>(1000, 5), 1000, "big");
  EXPECT_THROW(LocalTrainer(tiny(1), big), ConfigError);
}

}  // namespace
}  // namespace tierzero
