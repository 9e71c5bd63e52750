#include "tierzero/generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "model/ops.h"
#include "tierzero/error.h"

namespace tierzero {

KvDecoder::KvDecoder(const GptLayout& layout, const float* params)
    : layout_(layout),
      params_(params),
      wte_(params + layout.tensor("wte").offset),
      wpe_(layout.config().positions == Positions::learned ? params + layout.tensor("wpe").offset : nullptr),
      head_(params + layout.units()[layout.head_unit()].offset) {
  const GptConfig& c = layout.config();
  const std::size_t C = c.channels, T = c.context, F = c.ffn_size(), KVD = static_cast<std::size_t>(c.kv()) * c.head_size();
  keys_.assign(c.layers, std::vector<float>(T * KVD));
  values_.assign(c.layers, std::vector<float>(T * KVD));
  x_.resize(C), ln_.resize(C), mean_.resize(1), rstd_.resize(1), qkv_.resize(C + 2 * KVD), y_.resize(C), proj_.resize(C);
  fch_.resize(c.mlp == Mlp::swiglu ? 2 * F : F), fch_act_.resize(F), scores_.resize(T), logits_.resize(c.vocab);
  if (c.positions == Positions::rope) {
    const std::size_t n = T * (c.head_size() / 2);
    std::vector<double> cos(n), sin(n);
    ops::rope_tables(cos.data(), sin.data(), c.context, c.head_size(), c.rope_theta, c.rope_scaling);
    rope_cos_.assign(cos.begin(), cos.end());
    rope_sin_.assign(sin.begin(), sin.end());
  }
}

void KvDecoder::norm(const float* w, const float* b) {
  const GptConfig& c = layout_.config();
  if (c.norm == Norm::layernorm) ops::layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), w, b, 1, c.channels);
  else ops::rmsnorm_forward(ln_.data(), rstd_.data(), x_.data(), w, 1, c.channels, static_cast<float>(c.norm_eps));
}

const std::vector<float>& KvDecoder::step(int token) {
  const GptConfig& c = layout_.config();
  const int C = c.channels, H = c.heads, KV = c.kv(), hs = c.head_size(), KVD = KV * hs, rep = H / KV, F = c.ffn_size(), t = length_;
  TZ_CHECK(token >= 0 && token < c.vocab, ConfigError,
           "token id " + std::to_string(token) + " is outside the model's vocabulary of " + std::to_string(c.vocab));
  TZ_CHECK(t < c.context, ConfigError, "the model's context of " + std::to_string(c.context) + " positions is full");
  for (int i = 0; i < C; ++i)
    x_[i] = wte_[static_cast<std::size_t>(token) * C + i] + (wpe_ ? wpe_[static_cast<std::size_t>(t) * C + i] : 0.0f);
  const BlockOffsets& o = layout_.block();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int l = 0; l < c.layers; ++l) {
    const float* p = params_ + layout_.units()[layout_.block_unit(l)].offset;
    norm(p + o.ln1_w, tensor_at(p, o.ln1_b));
    ops::matmul_forward(qkv_.data(), ln_.data(), p + o.attn_w, tensor_at(p, o.attn_b), 1, C, C + 2 * KVD);
    if (c.positions == Positions::rope) {
      const std::size_t at = static_cast<std::size_t>(t) * (hs / 2);
      ops::rope_forward(qkv_.data(), rope_cos_.data() + at, rope_sin_.data() + at, 1, 1, H, KV, hs);
    }
    float* keys = keys_[l].data();
    float* values = values_[l].data();
    std::copy(qkv_.begin() + C, qkv_.begin() + C + KVD, keys + static_cast<std::size_t>(t) * KVD);
    std::copy(qkv_.begin() + C + KVD, qkv_.end(), values + static_cast<std::size_t>(t) * KVD);
    for (int h = 0; h < H; ++h) {  // causal attention of this position over positions 0..t
      const float* q = qkv_.data() + h * hs;
      const int g = h / rep;  // its key/value head
      for (int u = 0; u <= t; ++u) {
        const float* k = keys + static_cast<std::size_t>(u) * KVD + g * hs;
        float dot = 0;
        for (int i = 0; i < hs; ++i) dot += q[i] * k[i];
        scores_[u] = dot * scale;
      }
      const float top = *std::max_element(scores_.begin(), scores_.begin() + t + 1);
      float sum = 0;
      for (int u = 0; u <= t; ++u) sum += scores_[u] = std::exp(scores_[u] - top);
      float* y = y_.data() + h * hs;
      std::fill(y, y + hs, 0.0f);
      for (int u = 0; u <= t; ++u) {
        const float w = scores_[u] / sum;
        const float* v = values + static_cast<std::size_t>(u) * KVD + g * hs;
        for (int i = 0; i < hs; ++i) y[i] += w * v[i];
      }
    }
    ops::matmul_forward(proj_.data(), y_.data(), p + o.proj_w, tensor_at(p, o.proj_b), 1, C, C);
    ops::residual_forward(x_.data(), x_.data(), proj_.data(), C);
    norm(p + o.ln2_w, tensor_at(p, o.ln2_b));
    ops::matmul_forward(fch_.data(), ln_.data(), p + o.fc_w, tensor_at(p, o.fc_b), 1, C, static_cast<int>(fch_.size()));
    if (c.mlp == Mlp::swiglu) ops::swiglu_forward(fch_act_.data(), fch_.data(), 1, F);
    else ops::gelu_forward(fch_act_.data(), fch_.data(), fch_.size());
    ops::matmul_forward(proj_.data(), fch_act_.data(), p + o.fcproj_w, tensor_at(p, o.fcproj_b), 1, F, C);
    ops::residual_forward(x_.data(), x_.data(), proj_.data(), C);
  }
  const HeadOffsets& ho = layout_.head();
  norm(head_ + ho.lnf_w, tensor_at(head_, ho.lnf_b));
  const float* lm = ho.lm_head == kAbsent ? wte_ : head_ + ho.lm_head;
  ops::matmul_forward(logits_.data(), ln_.data(), lm, static_cast<const float*>(nullptr), 1, C, c.vocab);
  ++length_;
  return logits_;
}

namespace {
// A uniform double in [0, 1) from 53 random bits: the same on every platform
// (std::uniform_real_distribution's algorithm is the library's choice).
double uniform(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

std::uint32_t draw(const std::vector<float>& logits, const SampleOptions& o, std::mt19937_64& g, std::vector<int>& order,
                   std::vector<double>& weight) {
  const int V = static_cast<int>(logits.size());
  const int k = o.top_k > 0 ? std::min(o.top_k, V) : V;
  order.resize(V);
  std::iota(order.begin(), order.end(), 0);
  // The k largest, ties to the lower id, so the choice does not depend on the sort.
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  weight.resize(k);
  const double top = logits[order[0]];
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += weight[i] = std::exp((logits[order[i]] - top) / o.temperature);
  double r = uniform(g) * sum;
  for (int i = 0; i < k; ++i) {
    r -= weight[i];
    if (r < 0) return static_cast<std::uint32_t>(order[i]);
  }
  return static_cast<std::uint32_t>(order[k - 1]);
}
}  // namespace

std::vector<std::uint32_t> sample_tokens(const GptLayout& layout, const float* params, const std::vector<std::uint32_t>& prompt,
                                         const SampleOptions& o) {
  TZ_CHECK(!prompt.empty(), ConfigError, "the prompt needs at least one token");
  TZ_CHECK(o.tokens >= 0, ConfigError, "--tokens must be at least 0");
  TZ_CHECK(std::isfinite(o.temperature) && o.temperature > 0, ConfigError, "--temperature must be a positive number");
  TZ_CHECK(o.top_k >= 0, ConfigError, "--top-k must be at least 0 (0: every token)");
  const int context = layout.config().context;
  KvDecoder dec(layout, params);
  std::vector<std::uint32_t> text = prompt, out;
  std::mt19937_64 g(o.seed);
  std::vector<int> order;
  std::vector<double> weight;
  // Feeds the newest `keep` ids of the text into a fresh cache; the logits after the last.
  auto refill = [&](std::size_t keep) {
    dec.reset();
    const std::vector<float>* logits = nullptr;
    for (std::size_t i = text.size() - std::min(text.size(), keep); i < text.size(); ++i) logits = &dec.step(static_cast<int>(text[i]));
    return logits;
  };
  const std::vector<float>* logits = refill(static_cast<std::size_t>(context));
  for (int n = 0; n < o.tokens; ++n) {
    const std::uint32_t next = draw(*logits, o, g, order, weight);
    text.push_back(next);
    out.push_back(next);
    if (n + 1 == o.tokens) break;
    logits = dec.length() < context ? &dec.step(static_cast<int>(next)) : refill(static_cast<std::size_t>(context / 2));
  }
  return out;
}

}  // namespace tierzero
