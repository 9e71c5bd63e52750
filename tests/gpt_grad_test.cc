// Every parameter tensor's gradient against central finite differences, in
// double precision (so the tolerance is about truncation error, ~eps^2, not
// float rounding), for GPT-2 and Llama-family shapes (RMSNorm, RoPE with and
// without Llama 3.1 scaling, grouped- and multi-query attention, SwiGLU,
// untied heads, QKV-only biases); plus recompute == no recompute.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "model/gpt.h"

namespace tierzero {
namespace {

// The architectures checked: every Llama-family feature, each on and off.
GptConfig architecture(const std::string& name) {
  if (name == "gpt-tiny" || name == "llama-tiny") return gpt_preset(name);
  GptConfig c = gpt_preset("llama-tiny");
  c.name = name;
  if (name == "qwen-like") c.bias = Bias::qkv, c.tied = true, c.kv_heads = 1, c.norm_eps = 1e-6;  // multi-query, tied
  if (name == "llama31-like") c.rope_scaling = {8, 1, 4, 8}, c.rope_theta = 500000, c.kv_heads = 4;  // scaled RoPE, MHA
  if (name == "mixed") c.norm = Norm::layernorm, c.mlp = Mlp::gelu, c.bias = Bias::all, c.ffn = 96;  // LayerNorm + RoPE + GELU
  return c;
}

struct Fixture {
  GptLayout layout;
  int B = 2, T = 16;
  std::vector<double> params;
  std::vector<int> tokens, targets;
  explicit Fixture(const std::string& model = "gpt-tiny") : layout(architecture(model)) {
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

class GptGradients : public ::testing::TestWithParam<std::string> {};

TEST_P(GptGradients, EveryTensorMatchesCentralDifferences) {
  Fixture f(GetParam());
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

TEST_P(GptGradients, RecomputeGivesIdenticalGradients) {
  Fixture f(GetParam());
  std::vector<float> p(f.params.begin(), f.params.end());
  std::vector<float> g1(p.size(), 0.0f), g2(p.size(), 0.0f);
  GptModel<float> plain(f.layout, f.B, f.T, false), recompute(f.layout, f.B, f.T, true);
  const double l1 = plain.forward_backward(p.data(), g1.data(), f.tokens.data(), f.targets.data());
  const double l2 = recompute.forward_backward(p.data(), g2.data(), f.tokens.data(), f.targets.data());
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(g1, g2);
}

TEST_P(GptGradients, InitialLossIsNearLogVocab) {
  Fixture f(GetParam());
  std::vector<float> p(f.layout.num_params());
  gpt_init(f.layout, 3, p.data());
  GptModel<float> model(f.layout, f.B, f.T);
  EXPECT_NEAR(model.forward(p.data(), f.tokens.data(), f.targets.data()), std::log(256.0), 0.05);
}

INSTANTIATE_TEST_SUITE_P(Architectures, GptGradients,
                         ::testing::Values("gpt-tiny", "llama-tiny", "qwen-like", "llama31-like", "mixed"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

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
