// Every parameter tensor's gradient of gpt-tiny against central finite
// differences, in double precision (so the tolerance is about truncation
// error, ~eps^2, not float rounding); plus recompute == no recompute.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "model/gpt.h"

namespace tierzero {
namespace {

struct Fixture {
  GptLayout layout{gpt_preset("gpt-tiny")};
  int B = 2, T = 16;
  std::vector<double> params;
  std::vector<int> tokens, targets;
  Fixture() {
    std::vector<float> p(layout.num_params());
    gpt_init(layout, 42, p.data());
    params.assign(p.begin(), p.end());
    // Perturb biases and LayerNorm parameters so their gradients are generic.
    std::mt19937 g(1);
    std::normal_distribution<double> d(0.0, 0.1);
    for (const TensorInfo& t : layout.tensors())
      if (t.shape.size() == 1)
        for (std::size_t i = 0; i < t.numel; ++i) params[t.offset + i] += d(g);
    tokens.resize(B * T), targets.resize(B * T);
    for (int i = 0; i < B * T; ++i) tokens[i] = (i * 37 + 11) % 256, targets[i] = (i * 53 + 7) % 256;
  }
};

TEST(GptGradients, EveryTensorMatchesCentralDifferences) {
  Fixture f;
  GptModel<double> model(f.layout, f.B, f.T);
  std::vector<double> grads(f.layout.num_params(), 0.0);
  model.forward_backward(f.params.data(), grads.data(), f.tokens.data(), f.targets.data());
  const double eps = 1e-5;
  std::mt19937 g(7);
  for (const TensorInfo& t : f.layout.tensors()) {
    // Check the 4 largest-gradient entries and 4 random ones of every tensor.
    std::vector<std::size_t> idx(t.numel);
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + 4, idx.end(), [&](std::size_t a, std::size_t b) {
      return std::abs(grads[t.offset + a]) > std::abs(grads[t.offset + b]);
    });
    idx.resize(4);
    for (int r = 0; r < 4; ++r) idx.push_back(std::uniform_int_distribution<std::size_t>(0, t.numel - 1)(g));
    double max_abs_grad = 0;
    for (std::size_t i = 0; i < t.numel; ++i) max_abs_grad = std::max(max_abs_grad, std::abs(grads[t.offset + i]));
    ASSERT_GT(max_abs_grad, 1e-8) << t.name << " has no gradient at all";
    for (std::size_t i : idx) {
      double& p = f.params[t.offset + i];
      const double saved = p;
      p = saved + eps;
      const double up = model.forward(f.params.data(), f.tokens.data(), f.targets.data());
      p = saved - eps;
      const double down = model.forward(f.params.data(), f.tokens.data(), f.targets.data());
      p = saved;
      const double fd = (up - down) / (2 * eps);
      const double an = grads[t.offset + i];
      EXPECT_NEAR(an, fd, 1e-8 + 1e-6 * std::abs(fd)) << t.name << "[" << i << "]";
    }
  }
}

TEST(GptGradients, RecomputeGivesIdenticalGradients) {
  Fixture f;
  std::vector<float> p(f.params.begin(), f.params.end());
  std::vector<float> g1(p.size(), 0.0f), g2(p.size(), 0.0f);
  GptModel<float> plain(f.layout, f.B, f.T, false), recompute(f.layout, f.B, f.T, true);
  const double l1 = plain.forward_backward(p.data(), g1.data(), f.tokens.data(), f.targets.data());
  const double l2 = recompute.forward_backward(p.data(), g2.data(), f.tokens.data(), f.targets.data());
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(g1, g2);
}

TEST(GptGradients, InitialLossIsNearLogVocab) {
  Fixture f;
  std::vector<float> p(f.layout.num_params());
  gpt_init(f.layout, 3, p.data());
  GptModel<float> model(f.layout, f.B, f.T);
  EXPECT_NEAR(model.forward(p.data(), f.tokens.data(), f.targets.data()), std::log(256.0), 0.05);
}

TEST(GptConfig, PresetsAndParameterCounts) {
  EXPECT_EQ(gpt_preset("gpt2-124m").num_params(), 124439808u);  // GPT-2 small with tied head, context 1024
  EXPECT_EQ(GptLayout(gpt_preset("gpt-tiny")).num_params(), gpt_preset("gpt-tiny").num_params());
  const GptConfig m = gpt_preset("gpt-mini");
  EXPECT_GT(m.num_params(), 9'000'000u);
  EXPECT_LT(m.num_params(), 12'000'000u);
  EXPECT_NEAR(static_cast<double>(gpt_preset("gpt-20b").num_params()), 20.2e9, 0.3e9);
  GptConfig bad = m;
  bad.heads = 5;
  EXPECT_THROW(bad.validate(), std::exception);
}

}  // namespace
}  // namespace tierzero
