// Text generation from a trained GPT on one CPU rank, fp32: a decoder that
// keeps each layer's keys and values (the KV cache) so every new token costs
// one position's forward pass, and a sampler over its logits.
#pragma once
#include <cstdint>
#include <vector>

#include "tierzero/gpt_config.h"

namespace tierzero {

// Feeds tokens one at a time and returns the logits of the next token.
// Results equal GptModel's forward pass over the same prefix (to float
// rounding). Holds the parameters by pointer (num_params floats in
// GptLayout order); not thread-safe.
class KvDecoder {
 public:
  KvDecoder(const GptLayout& layout, const float* params);
  // Appends `token` at position length() and returns the logits [vocab] of
  // the token after it. Throws ConfigError for an id outside the vocabulary
  // or when the context (config().context positions) is full.
  const std::vector<float>& step(int token);
  int length() const { return length_; }
  // Forgets every position.
  void reset() { length_ = 0; }

 private:
  // ln_ = the configured norm of x_ with weight w (and a LayerNorm's bias b).
  void norm(const float* w, const float* b);

  const GptLayout& layout_;
  const float* params_;
  const float *wte_, *wpe_, *head_;  // inside params_ (wpe_ null with RoPE)
  int length_ = 0;
  std::vector<std::vector<float>> keys_, values_;  // per layer: [context, KV * D], keys rotated
  std::vector<float> x_, ln_, mean_, rstd_, qkv_, y_, proj_, fch_, fch_act_, scores_, logits_, rope_cos_, rope_sin_;
};

struct SampleOptions {
  int tokens = 64;           // how many to generate
  double temperature = 1.0;  // > 0; logits are divided by it
  int top_k = 0;             // keep the k most likely (0: all)
  std::uint64_t seed = 0;
};

// Continues `prompt` (at least one id) by `o.tokens` ids, each drawn from
// softmax(logits / temperature) over the top-k, with a generator seeded by
// `o.seed`: the same model, prompt and options give the same ids on every
// machine. When the context fills, the decoder restarts on the newest half
// of the text (a sliding window). Throws ConfigError for bad options.
std::vector<std::uint32_t> sample_tokens(const GptLayout& layout, const float* params, const std::vector<std::uint32_t>& prompt,
                                         const SampleOptions& o);

}  // namespace tierzero
