#include <cmath>

#include "tierzero/error.h"
#include "tierzero/gpt_config.h"

namespace tierzero {

void GptConfig::validate() const {
  auto positive = [&](int v, const char* field) {
    TZ_CHECK(v >= 1, ConfigError, "model '" + name + "': " + field + " must be at least 1, got " + std::to_string(v));
  };
  positive(vocab, "vocab");
  positive(context, "context");
  positive(layers, "layers");
  positive(channels, "channels");
  positive(heads, "heads");
  TZ_CHECK(channels % heads == 0, ConfigError,
           "model '" + name + "': channels (" + std::to_string(channels) + ") must be a multiple of heads (" + std::to_string(heads) + ")");
}

std::size_t GptConfig::num_params() const {
  const std::size_t V = vocab, T = context, L = layers, C = channels;
  return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;
}

double GptConfig::flops_per_token(int seq_len) const {
  const double n = static_cast<double>(num_params()) - static_cast<double>(context) * channels;
  return 6.0 * n + 12.0 * layers * channels * static_cast<double>(seq_len);
}

std::vector<std::string> gpt_preset_names() { return {"gpt-tiny", "gpt-mini", "gpt2-124m", "gpt-1.3b", "gpt-10b", "gpt-18b", "gpt-20b"}; }

GptConfig gpt_preset(std::string_view name) {
  // gpt2-124m: GPT-2 small (Radford et al. 2019). gpt-1.3b: GPT-3 XL (Brown et
  // al. 2020, table 2.1). gpt-20b: GPT-NeoX-20B's shape (Black et al. 2022:
  // 44 layers, 6144 channels, 64 heads, context 2048). gpt-10b: 48 layers of
  // 4096 channels (head size 128), the usual ~10B Megatron-style shape.
  // gpt-18b: 40 layers of 6144 channels, 48 heads (18.2B), the size of the
  // GPT the ZeRO++ paper and its DeepSpeed tutorial train on DGX-2 nodes.
  // The large ones use GPT-2's vocabulary of 50257.
  if (name == "gpt-tiny") return {"gpt-tiny", 256, 64, 2, 64, 4};
  if (name == "gpt-mini") return {"gpt-mini", 256, 256, 6, 384, 6};
  if (name == "gpt2-124m") return {"gpt2-124m", 50257, 1024, 12, 768, 12};
  if (name == "gpt-1.3b") return {"gpt-1.3b", 50257, 2048, 24, 2048, 16};
  if (name == "gpt-10b") return {"gpt-10b", 50257, 2048, 48, 4096, 32};
  if (name == "gpt-18b") return {"gpt-18b", 50257, 2048, 40, 6144, 48};
  if (name == "gpt-20b") return {"gpt-20b", 50257, 2048, 44, 6144, 64};
  std::string names;
  for (auto& n : gpt_preset_names()) names += (names.empty() ? "" : ", ") + n;
  TZ_THROW(ConfigError, "unknown model '" + std::string(name) + "' (presets: " + names + ")");
}

GptLayout::GptLayout(const GptConfig& c) : config_(c) {
  c.validate();
  const int V = c.vocab, T = c.context, C = c.channels;
  auto unit = [&](const std::string& name) { units_.push_back({name, total_, 0}); };
  auto add = [&](const std::string& name, std::vector<int> shape) {
    std::size_t n = 1;
    for (int d : shape) n *= static_cast<std::size_t>(d);
    UnitInfo& u = units_.back();
    tensors_.push_back({name, shape, total_, u.numel, n, static_cast<int>(units_.size()) - 1, shape.size() == 2});
    u.numel += n;
    total_ += n;
    return tensors_.back().unit_offset;
  };
  unit("embed");
  add("wte", {V, C});
  add("wpe", {T, C});
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    unit("block." + std::to_string(l));
    BlockOffsets b;
    b.ln1_w = add(p + "ln1_w", {C});
    b.ln1_b = add(p + "ln1_b", {C});
    b.attn_w = add(p + "attn_w", {3 * C, C});
    b.attn_b = add(p + "attn_b", {3 * C});
    b.proj_w = add(p + "proj_w", {C, C});
    b.proj_b = add(p + "proj_b", {C});
    b.ln2_w = add(p + "ln2_w", {C});
    b.ln2_b = add(p + "ln2_b", {C});
    b.fc_w = add(p + "fc_w", {4 * C, C});
    b.fc_b = add(p + "fc_b", {4 * C});
    b.fcproj_w = add(p + "fcproj_w", {C, 4 * C});
    b.fcproj_b = add(p + "fcproj_b", {C});
    block_ = b;
  }
  unit("head");
  add("lnf_w", {C});
  add("lnf_b", {C});
}

std::vector<int> GptLayout::forward_order() const {
  std::vector<int> order = {embed_unit()};
  for (int l = 0; l < config_.layers; ++l) order.push_back(block_unit(l));
  order.push_back(head_unit());
  return order;
}

std::vector<int> GptLayout::backward_order() const {
  std::vector<int> order = {head_unit()};
  for (int l = config_.layers - 1; l >= 0; --l) order.push_back(block_unit(l));
  return order;
}

std::vector<int> GptLayout::reduce_order() const {
  std::vector<int> order = backward_order();
  order.push_back(embed_unit());
  return order;
}

const TensorInfo& GptLayout::tensor(std::string_view name) const {
  for (const TensorInfo& t : tensors_)
    if (t.name == name) return t;
  TZ_THROW(ConfigError, "model has no tensor '" + std::string(name) + "'");
}

namespace {
// splitmix64 + Box-Muller: the same numbers on every platform and library.
struct Normal {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double operator()() {
    const double u1 = (static_cast<double>(next() >> 11) + 1.0) * 0x1p-53;
    const double u2 = static_cast<double>(next() >> 11) * 0x1p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};
}  // namespace

void gpt_init(const GptLayout& layout, std::uint64_t seed, float* params) {
  Normal rng{seed};
  const double proj_std = 0.02 / std::sqrt(2.0 * layout.config().layers);
  for (const TensorInfo& t : layout.tensors()) {
    float* p = params + t.offset;
    const bool is_ln_weight = t.name.ends_with("ln1_w") || t.name.ends_with("ln2_w") || t.name == "lnf_w";
    const bool is_residual_proj = t.name.ends_with(".proj_w") || t.name.ends_with("fcproj_w");
    for (std::size_t i = 0; i < t.numel; ++i) {
      if (t.shape.size() == 2) p[i] = static_cast<float>((is_residual_proj ? proj_std : 0.02) * rng());
      else p[i] = is_ln_weight ? 1.0f : 0.0f;
    }
  }
}

}  // namespace tierzero
