// gpt-tiny against PyTorch (tests/golden/make_gpt_golden.py): logits, loss,
// every gradient, 10 AdamW steps (losses and final weights) from the same
// weights and batch. Tolerances: fp32 through different GEMM kernels and
// summation orders: 1e-4 relative to each tensor's largest magnitude for
// logits and gradients, 1e-5 on the loss, 2e-4 on weights after 10 steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/gpt.h"
#include "tierzero/optim.h"
#include "ckpt/safetensors.h"

#ifndef TZ_GOLDEN_DIR
#error "TZ_GOLDEN_DIR must name tests/golden"
#endif

namespace tierzero {
namespace {

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0, worst = 0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::abs(w)));
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  EXPECT_LE(worst, rel * scale + 1e-7) << what << ": max |diff| " << worst << " vs scale " << scale;
}

struct Golden {
  SafeTensorsFile f = read_safetensors(std::string(TZ_GOLDEN_DIR) + "/gpt_tiny.safetensors");
  GptLayout layout{gpt_preset("gpt-tiny")};
  std::vector<float> params = std::vector<float>(layout.num_params());
  std::vector<int> tokens, targets;
  int B, T;
  Golden() {
    for (const TensorInfo& t : layout.tensors()) {
      const auto v = f.at("param." + t.name).as_f32();
      std::copy(v.begin(), v.end(), params.begin() + static_cast<std::ptrdiff_t>(t.offset));
    }
    const SafeTensor& tok = f.at("tokens");
    B = static_cast<int>(tok.shape[0]), T = static_cast<int>(tok.shape[1]);
    tokens = tok.as_i32();
    targets = f.at("targets").as_i32();
  }
};

TEST(GptVsPyTorch, LogitsLossAndEveryGradient) {
  Golden g;
  GptModel<float> model(g.layout, g.B, g.T);
  std::vector<float> grads(g.layout.num_params(), 0.0f);
  const double loss = model.forward_backward(g.params.data(), grads.data(), g.tokens.data(), g.targets.data());
  EXPECT_NEAR(loss, g.f.at("loss").as_f64()[0], 1e-5);
  // Logits are recomputed from the final LayerNorm output.
  std::vector<float> logits(static_cast<std::size_t>(g.B) * g.T * g.layout.config().vocab);
  model.forward(g.params.data(), g.tokens.data(), g.targets.data());
  model.logits(g.params.data(), g.params.data() + g.layout.units()[g.layout.head_unit()].offset, logits.data());
  expect_close(logits, g.f.at("logits").as_f32(), 1e-4, "logits");
  for (const TensorInfo& t : g.layout.tensors()) {
    std::vector<float> mine(grads.begin() + static_cast<std::ptrdiff_t>(t.offset),
                            grads.begin() + static_cast<std::ptrdiff_t>(t.offset + t.numel));
    expect_close(mine, g.f.at("grad." + t.name).as_f32(), 1e-4, "grad." + t.name);
  }
}

TEST(GptVsPyTorch, TenAdamWStepsWithClipping) {
  Golden g;
  GptModel<float> model(g.layout, g.B, g.T);
  const std::size_t n = g.layout.num_params();
  std::vector<float> grads(n), m(n, 0.0f), v(n, 0.0f);
  const AdamWConfig adamw{0.9f, 0.95f, 1e-8f, 0.1f};
  const auto want = g.f.at("losses").as_f64();
  for (std::size_t step = 0; step < want.size(); ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    const double loss = model.forward_backward(g.params.data(), grads.data(), g.tokens.data(), g.targets.data());
    EXPECT_NEAR(loss, want[step], 1e-4 * std::abs(want[step])) << "step " << step;
    double sq = 0;
    for (float x : grads) sq += static_cast<double>(x) * x;
    const float coef = clip_coefficient(std::sqrt(sq), 1.0f);
    for (float& x : grads) x *= coef;
    for (const TensorInfo& t : g.layout.tensors())
      adamw_update(g.params.data() + t.offset, grads.data() + t.offset, m.data() + t.offset, v.data() + t.offset, t.numel,
                   adamw, static_cast<std::int64_t>(step) + 1, 1e-3f, t.decay);
  }
  for (const TensorInfo& t : g.layout.tensors()) {
    std::vector<float> mine(g.params.begin() + static_cast<std::ptrdiff_t>(t.offset),
                            g.params.begin() + static_cast<std::ptrdiff_t>(t.offset + t.numel));
    expect_close(mine, g.f.at("final." + t.name).as_f32(), 2e-4, "final." + t.name);
  }
}

}  // namespace
}  // namespace tierzero
