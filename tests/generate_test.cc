// Generation: the KV-cache decoder against the full forward pass, and the
// sampler's determinism, greedy limit and sliding window.
#include "tierzero/generate.h"

#include <gtest/gtest.h>

#include <map>

#include <algorithm>
#include <cmath>

#include "fp32_matmul.h"
#include "tierzero/error.h"
#include "model/gpt.h"
#include "tierzero/hugging_face.h"

namespace tierzero {
namespace {

// The HF golden models: GPT-2 (vocab 256, context 16, 2 layers, 32
// channels), Llama (grouped-query, untied, RoPE) and Qwen2 (multi-query,
// q/k/v biases, tied, scaled RoPE): random weights large enough that logits vary.
const ModelWeights& golden(const std::string& name = "hf_gpt2") {
  static std::map<std::string, ModelWeights> w;
  if (!w.count(name)) w[name] = load_model_weights(std::string(TZ_GOLDEN_DIR) + "/" + name);
  return w[name];
}

class KvDecoderVsForward : public test::WithFp32Matmul<::testing::TestWithParam<std::string>> {};

TEST_P(KvDecoderVsForward, EveryStepGivesTheFullForwardsLogits) {
  const ModelWeights& w = golden(GetParam());
  const GptLayout layout(w.model);
  const int T = std::min(w.model.context, 32), V = w.model.vocab;
  std::vector<int> tokens(T);
  for (int t = 0; t < T; ++t) tokens[t] = (37 * t + 11) % V;
  GptModel<float> model(layout, 1, T);
  model.forward(w.params.data(), tokens.data(), tokens.data());
  std::vector<float> full(static_cast<std::size_t>(T) * V);
  model.logits(w.params.data(), w.params.data() + layout.units()[layout.head_unit()].offset, full.data());
  KvDecoder dec(layout, w.params.data());
  for (int t = 0; t < T; ++t) {
    const std::vector<float>& step = dec.step(tokens[t]);
    double worst = 0, scale = 0;
    for (int v = 0; v < V; ++v) {
      worst = std::max(worst, std::abs(static_cast<double>(step[v]) - full[static_cast<std::size_t>(t) * V + v]));
      scale = std::max(scale, std::abs(static_cast<double>(full[static_cast<std::size_t>(t) * V + v])));
    }
    EXPECT_LE(worst, 1e-5 * scale) << "position " << t;
  }
  EXPECT_EQ(dec.length(), T);
  while (dec.length() < w.model.context) dec.step(1);
  EXPECT_THROW(dec.step(1), ConfigError);  // the context is full
  dec.reset();
  EXPECT_THROW(dec.step(V), ConfigError);  // outside the vocabulary
}

INSTANTIATE_TEST_SUITE_P(Models, KvDecoderVsForward, ::testing::Values("hf_gpt2", "hf_llama_tiny", "hf_qwen_tiny"));

TEST(Sample, TopOneIsGreedy) {
  const ModelWeights& w = golden();
  const GptLayout layout(w.model);
  const std::vector<std::uint32_t> prompt = {72, 105};
  const auto ids = sample_tokens(layout, w.params.data(), prompt, {6, 1.0, 1, 99});
  // Greedy by hand: the arg-max of each step's logits, fed back.
  KvDecoder dec(layout, w.params.data());
  dec.step(72);
  const std::vector<float>* logits = &dec.step(105);
  for (std::uint32_t id : ids) {
    const auto best = static_cast<std::uint32_t>(std::max_element(logits->begin(), logits->end()) - logits->begin());
    ASSERT_EQ(id, best);
    logits = &dec.step(static_cast<int>(id));
  }
}

TEST(Sample, TheSeedDecidesAndTheWindowSlides) {
  const ModelWeights& w = golden();
  const GptLayout layout(w.model);
  const std::vector<std::uint32_t> prompt = {1, 2, 3};
  // 40 tokens through a context of 16: the decoder restarts on the newest half.
  const auto a = sample_tokens(layout, w.params.data(), prompt, {40, 1.5, 0, 7});
  const auto b = sample_tokens(layout, w.params.data(), prompt, {40, 1.5, 0, 7});
  const auto c = sample_tokens(layout, w.params.data(), prompt, {40, 1.5, 0, 8});
  ASSERT_EQ(a.size(), 40u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (std::uint32_t id : a) EXPECT_LT(id, 256u);
  // With top-k 3, every draw is among that step's three most likely.
  const auto k = sample_tokens(layout, w.params.data(), prompt, {10, 2.0, 3, 5});
  KvDecoder dec(layout, w.params.data());
  const std::vector<float>* logits = nullptr;
  for (std::uint32_t p : prompt) logits = &dec.step(static_cast<int>(p));
  for (std::uint32_t id : k) {
    int above = 0;
    for (float x : *logits) above += x > (*logits)[id];
    EXPECT_LT(above, 3);
    logits = &dec.step(static_cast<int>(id));
  }
  EXPECT_THROW(sample_tokens(layout, w.params.data(), {}, {}), ConfigError);
  EXPECT_THROW(sample_tokens(layout, w.params.data(), prompt, {4, 0.0, 0, 1}), ConfigError);
}

}  // namespace
}  // namespace tierzero
