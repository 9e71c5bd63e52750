#include <algorithm>
#include <cmath>
#include <sstream>

#include "tierzero/error.h"
#include "tierzero/gpt_config.h"

namespace tierzero {

std::string_view norm_name(Norm n) { return n == Norm::layernorm ? "layernorm" : "rmsnorm"; }
std::string_view positions_name(Positions p) { return p == Positions::learned ? "learned" : "rope"; }
std::string_view mlp_name(Mlp m) { return m == Mlp::gelu ? "gelu" : "swiglu"; }
std::string_view bias_name(Bias b) { return b == Bias::all ? "all" : b == Bias::none ? "none" : "qkv"; }

void GptConfig::validate() const {
  const std::string what = "model '" + name + "': ";
  auto positive = [&](int v, const char* field) {
    TZ_CHECK(v >= 1, ConfigError, what + field + " must be at least 1, got " + std::to_string(v));
  };
  positive(vocab, "vocab");
  positive(context, "context");
  positive(layers, "layers");
  positive(channels, "channels");
  positive(heads, "heads");
  TZ_CHECK(kv_heads >= 0 && ffn >= 0, ConfigError, what + "kv_heads and ffn must be at least 0 (0: the default)");
  TZ_CHECK(channels % heads == 0, ConfigError,
           what + "channels (" + std::to_string(channels) + ") must be a multiple of heads (" + std::to_string(heads) + ")");
  TZ_CHECK(heads % kv() == 0, ConfigError,
           what + "heads (" + std::to_string(heads) + ") must be a multiple of kv_heads (" + std::to_string(kv()) + ")");
  TZ_CHECK(positions == Positions::learned || head_size() % 2 == 0, ConfigError,
           what + "rope needs an even head size, got " + std::to_string(head_size()));
  TZ_CHECK(norm_eps > 0 && norm_eps < 1, ConfigError, what + "norm_eps must be in (0, 1)");
  // The LayerNorm kernels (CPU and GPU) use GPT-2's epsilon.
  TZ_CHECK(norm == Norm::rmsnorm || norm_eps == 1e-5, ConfigError, what + "layernorm supports norm_eps 1e-5 only (GPT-2's)");
  TZ_CHECK(rope_theta > 1, ConfigError, what + "rope_theta must be above 1");
  const RopeScaling& r = rope_scaling;
  TZ_CHECK(r.factor == 0 || (r.factor >= 1 && r.high_freq_factor > r.low_freq_factor && r.low_freq_factor > 0 && r.original_context >= 1),
           ConfigError, what + "rope_scaling needs factor >= 1, 0 < low_freq_factor < high_freq_factor and original_context >= 1");
  TZ_CHECK(r.factor == 0 || positions == Positions::rope, ConfigError, what + "rope_scaling needs positions = rope");
}

std::string_view GptConfig::family() const {
  const bool gpt2 = norm == Norm::layernorm && positions == Positions::learned && mlp == Mlp::gelu && bias == Bias::all && tied &&
                    kv() == heads && ffn_size() == 4 * channels;
  return gpt2 ? "gpt2" : "llama";
}

bool GptConfig::same_architecture(const GptConfig& o) const {
  return vocab == o.vocab && context == o.context && layers == o.layers && channels == o.channels && heads == o.heads && kv() == o.kv() &&
         ffn_size() == o.ffn_size() && norm == o.norm && norm_eps == o.norm_eps && positions == o.positions &&
         (positions == Positions::learned || (rope_theta == o.rope_theta && rope_scaling == o.rope_scaling)) && mlp == o.mlp &&
         bias == o.bias && tied == o.tied;
}

std::string GptConfig::describe() const {
  std::ostringstream os;
  os << name << ": V " << vocab << ", T " << context << ", L " << layers << ", C " << channels << ", H " << heads << ", KV " << kv()
     << ", F " << ffn_size() << ", " << norm_name(norm);
  if (norm == Norm::rmsnorm) os << " (eps " << norm_eps << ")";
  os << ", " << positions_name(positions);
  if (positions == Positions::rope) {
    os << " (theta " << rope_theta;
    if (rope_scaling.factor > 0) os << ", llama3 scaling x" << rope_scaling.factor << " from " << rope_scaling.original_context;
    os << ")";
  }
  os << ", " << mlp_name(mlp) << ", bias " << bias_name(bias) << ", " << (tied ? "tied" : "untied") << " head, " << num_params()
     << " parameters";
  return os.str();
}

std::size_t GptConfig::num_params() const {
  const std::size_t V = vocab, T = context, L = layers, C = channels, F = ffn_size(), KVD = static_cast<std::size_t>(kv()) * head_size();
  const std::size_t norm_n = norm == Norm::layernorm ? 2 * C : C;
  const std::size_t attn = (C + 2 * KVD) * C + (qkv_bias() ? C + 2 * KVD : 0) + C * C + (linear_bias() ? C : 0);
  const std::size_t mlp_n = (mlp == Mlp::swiglu ? 3 : 2) * F * C + (linear_bias() ? F + C : 0);
  return V * C + (positions == Positions::learned ? T * C : 0) + L * (attn + mlp_n + 2 * norm_n) + norm_n + (tied ? 0 : V * C);
}

double GptConfig::flops_per_token(int seq_len) const {
  const double lookups = static_cast<double>(positions == Positions::learned ? context : 0) * channels +
                         (tied ? 0.0 : static_cast<double>(vocab) * channels);
  const double n = static_cast<double>(num_params()) - lookups;
  return 6.0 * n + 12.0 * layers * channels * static_cast<double>(seq_len);
}

std::vector<std::string> gpt_preset_names() {
  return {"gpt-tiny", "gpt-mini", "gpt2-124m", "gpt-1.3b", "gpt-10b", "gpt-18b", "gpt-20b",
          "llama-tiny", "llama-mini", "llama3.2-1b", "llama3-8b", "llama3-70b", "qwen2.5-7b"};
}

namespace {
// A Llama-family shape: RMSNorm, RoPE, SwiGLU, no biases, untied head.
GptConfig llama(std::string name, int vocab, int context, int layers, int channels, int heads, int kv_heads, int ffn, double theta,
                double eps) {
  GptConfig c{std::move(name), vocab, context, layers, channels, heads};
  c.kv_heads = kv_heads, c.ffn = ffn, c.rope_theta = theta, c.norm_eps = eps;
  c.norm = Norm::rmsnorm, c.positions = Positions::rope, c.mlp = Mlp::swiglu, c.bias = Bias::none, c.tied = false;
  return c;
}
}  // namespace

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
  // llama-tiny and llama-mini: byte vocabulary, grouped-query attention
  // (2 query heads per key/value head); llama-mini's F = 3C makes it
  // gpt-mini's size within 0.3% (10,818,432 against 10,844,160 parameters).
  if (name == "llama-tiny") return llama("llama-tiny", 256, 64, 2, 64, 4, 2, 176, 10000, 1e-5);
  if (name == "llama-mini") return llama("llama-mini", 256, 256, 6, 384, 6, 3, 1152, 10000, 1e-5);
  // Llama-3.2-1B's config.json (huggingface.co/meta-llama/Llama-3.2-1B):
  // vocab_size 128256, max_position_embeddings 131072, 16 layers, hidden
  // 2048, 32 heads, 8 KV heads, intermediate 8192, rope_theta 500000,
  // rms_norm_eps 1e-5, tie_word_embeddings true, rope_scaling llama3 with
  // factor 32, low/high frequency factors 1 and 4, original context 8192.
  if (name == "llama3.2-1b") {
    GptConfig c = llama("llama3.2-1b", 128256, 131072, 16, 2048, 32, 8, 8192, 500000, 1e-5);
    c.tied = true;
    c.rope_scaling = {32, 1, 4, 8192};
    return c;
  }
  // Meta-Llama-3-8B and -70B's config.json (huggingface.co/meta-llama):
  // vocab_size 128256, max_position_embeddings 8192, rope_theta 500000,
  // rms_norm_eps 1e-5, untied; 8B: 32 layers, hidden 4096, 32 heads, 8 KV
  // heads, intermediate 14336; 70B: 80 layers, hidden 8192, 64 heads, 8 KV
  // heads, intermediate 28672.
  if (name == "llama3-8b") return llama("llama3-8b", 128256, 8192, 32, 4096, 32, 8, 14336, 500000, 1e-5);
  if (name == "llama3-70b") return llama("llama3-70b", 128256, 8192, 80, 8192, 64, 8, 28672, 500000, 1e-5);
  // Qwen2.5-7B's config.json (huggingface.co/Qwen/Qwen2.5-7B): vocab_size
  // 152064, max_position_embeddings 131072, 28 layers, hidden 3584, 28
  // heads, 4 KV heads, intermediate 18944, rope_theta 1e6, rms_norm_eps
  // 1e-6, biases on q/k/v only, untied.
  if (name == "qwen2.5-7b") {
    GptConfig c = llama("qwen2.5-7b", 152064, 131072, 28, 3584, 28, 4, 18944, 1e6, 1e-6);
    c.bias = Bias::qkv;
    return c;
  }
  std::string names;
  for (auto& n : gpt_preset_names()) names += (names.empty() ? "" : ", ") + n;
  TZ_THROW(ConfigError, "unknown model '" + std::string(name) + "' (presets: " + names +
                            "; or a model file *.toml, a Hugging Face config.json or its directory)");
}

std::string_view tp_split_name(TpSplit s) {
  switch (s) {
    case TpSplit::replicated: return "replicated";
    case TpSplit::column: return "column";
    case TpSplit::row: return "row";
    case TpSplit::vocab: return "vocab";
  }
  return "?";
}

void check_tp(const GptConfig& c, int tp) {
  const std::string degree = "tp = " + std::to_string(tp);
  TZ_CHECK(tp >= 1, ConfigError, degree + ": the tensor-parallel degree must be at least 1");
  auto divides = [&](int n, const std::string& what) {
    TZ_CHECK(n % tp == 0, ConfigError, degree + " does not divide the " + std::to_string(n) + " " + what + " of model '" + c.name + "'");
  };
  divides(c.heads, "heads");
  divides(c.ffn_size(), "MLP columns (ffn)");
  TZ_CHECK(tp <= c.vocab, ConfigError, degree + " exceeds the vocabulary of " + std::to_string(c.vocab) + " of model '" + c.name + "'");
}

int GptLayout::vocab_first(int rank) const {
  const int q = config_.vocab / tp_.size, extra = config_.vocab % tp_.size;
  return rank * q + std::min(rank, extra);
}

TpKvHeads tp_kv_heads(const GptConfig& c, int tp, int rank) {
  const int run = c.heads / tp, q0 = rank * run, group = c.heads / c.kv();
  const int first = q0 / group, last = (q0 + run - 1) / group;
  return {first, {last - first + 1, group, q0 % group}};
}

int tp_kv_owner(const GptConfig& c, int tp, int head) {
  const int run = c.heads / tp, group = c.heads / c.kv();
  const int first = head * group / run, last = ((head + 1) * group - 1) / run;  // the members whose query heads read it
  return first == last ? -1 : first;
}

int tp_local_kv(const GptConfig& c, int tp) {
  int most = 0;
  for (int r = 0; r < tp; ++r) most = std::max(most, tp_kv_heads(c, tp, r).heads.count);
  return most;
}

TpShard largest_member(const GptConfig& c, int tp) {
  // Members differ only by their vocabulary rows (of wte, and of an untied lm_head) and by their key/value heads
  // (2 D rows of C, and biases, in every block); the rest of their slices are alike.
  const double row = static_cast<double>(c.channels) * (c.tied ? 1 : 2);
  const double head = 2.0 * c.head_size() * (c.channels + (c.qkv_bias() ? 1 : 0)) * c.layers;
  TpShard largest{tp, 0};
  double most = -1;
  for (int r = 0; r < tp; ++r) {
    const int rows = c.vocab / tp + (r < c.vocab % tp ? 1 : 0);
    if (const double n = rows * row + tp_kv_heads(c, tp, r).heads.count * head; n > most) most = n, largest.rank = r;
  }
  return largest;
}

std::size_t tp_kv_grad_elements(const GptConfig& c, int tp) {
  if (c.kv() % tp == 0) return 0;
  const std::size_t rows = 2 * static_cast<std::size_t>(c.kv()) * static_cast<std::size_t>(c.head_size());
  return rows * (static_cast<std::size_t>(c.channels) + (c.qkv_bias() ? 1 : 0));
}

GptLayout::GptLayout(const GptConfig& c, TpShard tp) : config_(c), tp_(tp) {
  c.validate();
  check_tp(c, tp.size);
  TZ_CHECK(tp.rank >= 0 && tp.rank < tp.size, ConfigError,
           "tensor-parallel rank " + std::to_string(tp.rank) + " is outside a group of " + std::to_string(tp.size));
  const int V = c.vocab, T = c.context, C = c.channels, F = c.ffn_size(), KVD = c.kv() * c.head_size(), QKV = C + 2 * KVD;
  const bool layernorm = c.norm == Norm::layernorm, swiglu = c.mlp == Mlp::swiglu;
  const std::size_t n = static_cast<std::size_t>(tp.size), r = static_cast<std::size_t>(tp.rank);
  std::size_t global_total = 0;
  auto unit = [&](const std::string& name) { units_.push_back({name, total_, 0}); };
  // `parts`: a column-split tensor's row ranges (q | k | v; gate | up), each cut in n pieces of which member r holds
  // piece r, or (kv_heads) in key/value heads of which it holds its tp_kv_heads, a shared one's owned by tp_kv_owner.
  struct Part {
    int rows;
    bool kv_heads = false;
  };
  const TpKvHeads kv = tp_kv_heads(c, tp.size, tp.rank);
  auto add = [&](const std::string& name, std::vector<int> shape, TpSplit split = TpSplit::replicated, std::vector<Part> parts = {}) {
    std::size_t whole = 1;
    for (int d : shape) whole *= static_cast<std::size_t>(d);
    UnitInfo& u = units_.back();
    TensorInfo t{name, shape, total_, u.numel, whole, static_cast<int>(units_.size()) - 1, shape.size() == 2, split, global_total, {}};
    if (n == 1 || split == TpSplit::replicated) {
      t.slices = {{0, 0, whole}};
    } else if (split == TpSplit::vocab) {  // [V, C]: the member's rows
      const std::size_t width = static_cast<std::size_t>(shape[1]);
      t.shape[0] = local_vocab();
      t.slices = {{0, static_cast<std::size_t>(vocab_begin()) * width, static_cast<std::size_t>(local_vocab()) * width}};
    } else if (split == TpSplit::row) {  // [out, in]: every row's member columns
      const std::size_t in = static_cast<std::size_t>(shape[1]), local = in / n;
      t.shape[1] = static_cast<int>(local);
      t.slices = {{0, r * local, local, static_cast<std::size_t>(shape[0]), local, in}};
    } else {  // column: the member's rows of each part
      const std::size_t width = shape.size() == 2 ? static_cast<std::size_t>(shape[1]) : 1;
      std::size_t rows = 0, first = 0;
      for (const Part& part : parts) {
        if (!part.kv_heads) {
          const std::size_t local = static_cast<std::size_t>(part.rows) / n;
          t.slices.push_back({rows * width, (first + r * local) * width, local * width});
          rows += local;
        } else {
          const std::size_t D = static_cast<std::size_t>(c.head_size());
          for (int h = kv.first; h < kv.first + kv.heads.count; ++h) {
            const int owner = tp_kv_owner(c, tp.size, h);
            TpSlice& last = t.slices.back();
            if (owner < 0 && last.owner < 0 && h > kv.first)
              last.length += D * width;  // a head of its own after another: one run
            else
              t.slices.push_back({rows * width, (first + static_cast<std::size_t>(h) * D) * width, D * width, 1, 0, 0, owner});
            rows += D;
          }
        }
        first += static_cast<std::size_t>(part.rows);
      }
      t.shape[0] = static_cast<int>(rows);
    }
    t.numel = 1;
    for (int d : t.shape) t.numel *= static_cast<std::size_t>(d);
    tensors_.push_back(std::move(t));
    u.numel += tensors_.back().numel;
    total_ += tensors_.back().numel;
    global_total += whole;
    return tensors_.back().unit_offset;
  };
  auto maybe = [&](bool present, const std::string& name, std::vector<int> shape, TpSplit split = TpSplit::replicated,
                   std::vector<Part> parts = {}) { return present ? add(name, std::move(shape), split, std::move(parts)) : kAbsent; };
  const std::vector<Part> qkv_parts = {{C}, {KVD, true}, {KVD, true}};
  const std::vector<Part> fc_parts = swiglu ? std::vector<Part>{{F}, {F}} : std::vector<Part>{{F}};
  unit("embed");
  add("wte", {V, C}, TpSplit::vocab);
  if (c.positions == Positions::learned) add("wpe", {T, C});
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    unit("block." + std::to_string(l));
    BlockOffsets b;
    b.ln1_w = add(p + "ln1_w", {C});
    b.ln1_b = maybe(layernorm, p + "ln1_b", {C});
    b.attn_w = add(p + "attn_w", {QKV, C}, TpSplit::column, qkv_parts);
    b.attn_b = maybe(c.qkv_bias(), p + "attn_b", {QKV}, TpSplit::column, qkv_parts);
    b.proj_w = add(p + "proj_w", {C, C}, TpSplit::row);
    b.proj_b = maybe(c.linear_bias(), p + "proj_b", {C});
    b.ln2_w = add(p + "ln2_w", {C});
    b.ln2_b = maybe(layernorm, p + "ln2_b", {C});
    b.fc_w = add(p + "fc_w", {swiglu ? 2 * F : F, C}, TpSplit::column, fc_parts);
    b.fc_b = maybe(c.linear_bias(), p + "fc_b", {F}, TpSplit::column, {{F}});
    b.fcproj_w = add(p + "fcproj_w", {C, F}, TpSplit::row);
    b.fcproj_b = maybe(c.linear_bias(), p + "fcproj_b", {C});
    block_ = b;
  }
  unit("head");
  head_.lnf_w = add("lnf_w", {C});
  head_.lnf_b = maybe(layernorm, "lnf_b", {C});
  head_.lm_head = maybe(!c.tied, "lm_head", {V, C}, TpSplit::vocab);
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
// Each sample takes two steps of the generator, whose state after k steps
// is seed + k * kGolden: any sample can be drawn without the ones before.
constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;
struct Normal {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += kGolden);
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

void gpt_init(const GptLayout& layout, std::uint64_t seed, float* params) { gpt_init_range(layout, seed, 0, layout.num_params(), params); }

void gpt_init_range(const GptLayout& layout, std::uint64_t seed, std::size_t first, std::size_t count, float* out) {
  const double proj_std = 0.02 / std::sqrt(2.0 * layout.config().layers);
  std::uint64_t samples_before = 0;  // random samples drawn for the matrices before this tensor
  for (const TensorInfo& t : layout.tensors()) {
    const bool matrix = t.shape.size() == 2;
    const std::size_t lo = std::max(first, t.offset), hi = std::min(first + count, t.offset + t.numel);
    if (lo < hi) {
      const bool is_norm_weight = t.name.ends_with("ln1_w") || t.name.ends_with("ln2_w") || t.name == "lnf_w";
      const bool is_residual_proj = t.name.ends_with(".proj_w") || t.name.ends_with("fcproj_w");
      Normal rng{seed + 2 * (samples_before + (lo - t.offset)) * kGolden};
      for (std::size_t i = lo; i < hi; ++i) {
        if (matrix) out[i - first] = static_cast<float>((is_residual_proj ? proj_std : 0.02) * rng());
        else out[i - first] = is_norm_weight ? 1.0f : 0.0f;
      }
    }
    if (matrix) samples_before += t.numel;
  }
}

}  // namespace tierzero
