// Model descriptions from files: TOML model tables and Hugging Face
// config.json (docs/models.md lists every key).
#include "model/model_file.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <limits>
#include <set>

#include "core/read_file.h"
#include "core/toml_read.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {
template <class E>
E parse_choice(const std::string& v, std::initializer_list<E> choices, std::string_view (*name)(E), const std::string& where) {
  std::string names;
  for (E e : choices) {
    if (v == name(e)) return e;
    names += (names.empty() ? "" : ", ") + std::string(name(e));
  }
  TZ_THROW(ConfigError, where + " must be one of " + names + ", got '" + v + "'");
}

// The shape checks, reported against the file.
void validated(const GptConfig& m, const std::string& origin) {
  try {
    m.validate();
  } catch (const ConfigError& e) {
    TZ_THROW(ConfigError, origin + ": " + e.message());
  }
}
}  // namespace

void read_model_table(const toml::table& t, const std::string& origin, const std::string& prefix, GptConfig& m) {
  if (const toml::node* p = t.get("preset")) m = gpt_preset(get<std::string>(*p, prefix + "preset", origin));
  m.name = "custom";
  for (auto&& [k, node] : t) {
    const toml::node& v = node;  // a plain reference: lambdas may not capture structured bindings (clang 14)
    const std::string key(k.str()), full = prefix + key, where = origin + ": key '" + full + "'";
    auto count = [&](int lo) { return static_cast<int>(get_int(v, full, origin, lo)); };
    auto real = [&] { return get<double>(v, full, origin); };
    auto text = [&] { return get<std::string>(v, full, origin); };
    if (key == "preset") continue;
    else if (key == "name") m.name = text();
    else if (key == "vocab") m.vocab = count(1);
    else if (key == "context") m.context = count(1);
    else if (key == "layers") m.layers = count(1);
    else if (key == "channels") m.channels = count(1);
    else if (key == "heads") m.heads = count(1);
    else if (key == "kv_heads") m.kv_heads = count(1);
    else if (key == "ffn") m.ffn = count(1);
    else if (key == "norm") m.norm = parse_choice(text(), {Norm::layernorm, Norm::rmsnorm}, norm_name, where);
    else if (key == "norm_eps") m.norm_eps = real();
    else if (key == "positions") m.positions = parse_choice(text(), {Positions::learned, Positions::rope}, positions_name, where);
    else if (key == "rope_theta") m.rope_theta = real();
    else if (key == "mlp") m.mlp = parse_choice(text(), {Mlp::gelu, Mlp::swiglu}, mlp_name, where);
    else if (key == "bias") m.bias = parse_choice(text(), {Bias::all, Bias::none, Bias::qkv}, bias_name, where);
    else if (key == "tied") m.tied = get<bool>(v, full, origin);
    else if (key == "rope_scaling") {
      const toml::table* r = v.as_table();
      TZ_CHECK(r, ConfigError, where + " must be a table (factor, low_freq_factor, high_freq_factor, original_context)");
      RopeScaling s;
      for (auto&& [rk, rv] : *r) {
        const std::string sub(rk.str()), sfull = full + "." + sub;
        if (sub == "factor") s.factor = get<double>(rv, sfull, origin);
        else if (sub == "low_freq_factor") s.low_freq_factor = get<double>(rv, sfull, origin);
        else if (sub == "high_freq_factor") s.high_freq_factor = get<double>(rv, sfull, origin);
        else if (sub == "original_context") s.original_context = static_cast<int>(get_int(rv, sfull, origin, 1));
        else TZ_THROW(ConfigError, origin + ": unknown key '" + sfull + "'");
      }
      m.rope_scaling = s;
    } else TZ_THROW(ConfigError, origin + ": unknown key '" + full + "'");
  }
  validated(m, origin);
}

namespace {
using json = nlohmann::json;

// Keys of Hugging Face configs besides the shape's: those read by name
// below (norms, RoPE, biases, activation, tying), and those that do not
// change the model's shape or arithmetic here (token ids, dtypes,
// initialisation, caching, the library's own bookkeeping).
const std::set<std::string> kOtherHfKeys = {
    "architectures", "model_type", "transformers_version", "torch_dtype", "bos_token_id", "eos_token_id", "pad_token_id",
    "initializer_range", "use_cache", "pretraining_tp", "attention_dropout", "_name_or_path", "max_window_layers",
    "use_sliding_window", "sliding_window", "rope_scaling", "head_dim", "mlp_bias", "attention_bias", "tie_word_embeddings",
    // GPT-2's dropouts and generation settings (tierzero trains without dropout).
    "resid_pdrop", "embd_pdrop", "attn_pdrop", "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels",
    "summary_first_dropout", "task_specific_params", "scale_attn_weights", "reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx",
    "n_ctx", "n_inner", "activation_function", "layer_norm_epsilon", "hidden_act", "rms_norm_eps", "rope_theta"};

int whole(const json& j, const char* key, const std::string& origin) {
  TZ_CHECK(j.contains(key), ConfigError, origin + ": missing key '" + key + "'");
  const json& v = j.at(key);
  TZ_CHECK(v.is_number_integer() && v.get<std::int64_t>() >= 1 && v.get<std::int64_t>() <= std::numeric_limits<int>::max(),
           ConfigError, origin + ": key '" + key + "' must be a positive integer");
  return v.get<int>();
}

double number(const json& j, const char* key, double fallback, const std::string& origin) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  TZ_CHECK(j.at(key).is_number(), ConfigError, origin + ": key '" + key + "' must be a number");
  return j.at(key).get<double>();
}

bool flag(const json& j, const char* key, bool fallback, const std::string& origin) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  TZ_CHECK(j.at(key).is_boolean(), ConfigError, origin + ": key '" + key + "' must be true or false");
  return j.at(key).get<bool>();
}

GptConfig hf_gpt2(const json& j, const std::string& origin) {
  const std::string act = j.value("activation_function", "gelu_new");
  TZ_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh", ConfigError,
           origin + ": activation_function '" + act + "' is not supported (tierzero's GPT-2 uses the tanh GELU, gelu_new)");
  GptConfig m{"hf-gpt2", whole(j, "vocab_size", origin), whole(j, "n_positions", origin), whole(j, "n_layer", origin),
              whole(j, "n_embd", origin), whole(j, "n_head", origin)};
  TZ_CHECK(!j.contains("n_inner") || j.at("n_inner").is_null() || j.at("n_inner") == 4 * m.channels, ConfigError,
           origin + ": key 'n_inner' must be 4 x n_embd");
  TZ_CHECK(number(j, "layer_norm_epsilon", 1e-5, origin) == 1e-5, ConfigError, origin + ": key 'layer_norm_epsilon' must be 1e-5");
  TZ_CHECK(flag(j, "tie_word_embeddings", true, origin), ConfigError, origin + ": key 'tie_word_embeddings': GPT-2's head is tied");
  return m;
}

// LlamaForCausalLM, MistralForCausalLM and Qwen2ForCausalLM: RMSNorm, RoPE,
// SwiGLU (hidden_act silu), grouped-query attention.
GptConfig hf_llama(const json& j, const std::string& arch, const std::string& origin) {
  GptConfig m{arch == "Qwen2ForCausalLM" ? "hf-qwen2" : arch == "MistralForCausalLM" ? "hf-mistral" : "hf-llama",
              whole(j, "vocab_size", origin), whole(j, "max_position_embeddings", origin), whole(j, "num_hidden_layers", origin),
              whole(j, "hidden_size", origin), whole(j, "num_attention_heads", origin)};
  m.norm = Norm::rmsnorm, m.positions = Positions::rope, m.mlp = Mlp::swiglu;
  m.kv_heads = j.contains("num_key_value_heads") && !j.at("num_key_value_heads").is_null() ? whole(j, "num_key_value_heads", origin) : 0;
  m.ffn = whole(j, "intermediate_size", origin);
  m.norm_eps = number(j, "rms_norm_eps", 1e-6, origin);
  m.rope_theta = number(j, "rope_theta", 10000, origin);
  m.tied = flag(j, "tie_word_embeddings", false, origin);
  const std::string act = j.value("hidden_act", "silu");
  TZ_CHECK(act == "silu", ConfigError, origin + ": hidden_act '" + act + "' is not supported (the SwiGLU MLP needs silu)");
  if (j.contains("head_dim") && !j.at("head_dim").is_null())
    TZ_CHECK(j.at("head_dim") == m.channels / m.heads, ConfigError,
             origin + ": key 'head_dim' must be hidden_size / num_attention_heads (" + std::to_string(m.channels / m.heads) + ")");
  TZ_CHECK(!flag(j, "mlp_bias", false, origin), ConfigError, origin + ": key 'mlp_bias': MLP biases are not supported");
  if (arch == "Qwen2ForCausalLM") {
    m.bias = Bias::qkv;  // Qwen2's q/k/v projections carry biases, nothing else does
    TZ_CHECK(!flag(j, "use_sliding_window", false, origin), ConfigError,
             origin + ": key 'use_sliding_window': sliding-window attention is not supported");
  } else {
    m.bias = flag(j, "attention_bias", false, origin) ? Bias::qkv : Bias::none;
    TZ_CHECK(!flag(j, "attention_bias", false, origin) || arch != "MistralForCausalLM", ConfigError,
             origin + ": key 'attention_bias': Mistral has none");
  }
  if (arch == "MistralForCausalLM" && j.contains("sliding_window") && !j.at("sliding_window").is_null())
    TZ_CHECK(j.at("sliding_window").is_number_integer() && j.at("sliding_window").get<std::int64_t>() >= m.context, ConfigError,
             origin + ": key 'sliding_window' shorter than the context: sliding-window attention is not supported");
  if (j.contains("rope_scaling") && !j.at("rope_scaling").is_null()) {
    const json& r = j.at("rope_scaling");
    TZ_CHECK(r.is_object(), ConfigError, origin + ": key 'rope_scaling' must be an object");
    const std::string type = r.value("rope_type", r.value("type", std::string()));
    TZ_CHECK(type == "llama3", ConfigError,
             origin + ": key 'rope_scaling.rope_type' is '" + type + "' (supported: llama3)");
    m.rope_scaling.factor = number(r, "factor", 0, origin);
    m.rope_scaling.low_freq_factor = number(r, "low_freq_factor", 1, origin);
    m.rope_scaling.high_freq_factor = number(r, "high_freq_factor", 4, origin);
    m.rope_scaling.original_context = whole(r, "original_max_position_embeddings", origin);
  }
  return m;
}
}  // namespace

GptConfig parse_hf_config(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    TZ_THROW(ConfigError, origin + " is not valid JSON: " + e.what());
  }
  TZ_CHECK(j.is_object(), ConfigError, origin + ": not a Hugging Face config (a JSON object)");
  std::string arch;
  if (j.contains("architectures") && j.at("architectures").is_array() && !j.at("architectures").empty() &&
      j.at("architectures").at(0).is_string())
    arch = j.at("architectures").at(0).get<std::string>();
  else if (j.is_object() && j.contains("model_type") && j.at("model_type").is_string()) {
    const std::string type = j.at("model_type").get<std::string>();  // older files name only the type
    arch = type == "gpt2" ? "GPT2LMHeadModel" : type == "llama" ? "LlamaForCausalLM" : type == "qwen2" ? "Qwen2ForCausalLM"
         : type == "mistral" ? "MistralForCausalLM" : type;
  }
  const std::set<std::string> known = {"GPT2LMHeadModel", "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"};
  TZ_CHECK(known.count(arch), ConfigError,
           origin + ": architecture '" + arch + "' is not supported (GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)");
  const std::set<std::string> shape = arch == "GPT2LMHeadModel"
      ? std::set<std::string>{"vocab_size", "n_positions", "n_layer", "n_embd", "n_head"}
      : std::set<std::string>{"vocab_size", "max_position_embeddings", "num_hidden_layers", "hidden_size", "num_attention_heads",
                              "num_key_value_heads", "intermediate_size"};
  for (auto it = j.begin(); it != j.end(); ++it)
    TZ_CHECK(shape.count(it.key()) || kOtherHfKeys.count(it.key()), ConfigError, origin + ": unknown key '" + it.key() + "'");
  GptConfig m = arch == "GPT2LMHeadModel" ? hf_gpt2(j, origin) : hf_llama(j, arch, origin);
  validated(m, origin);
  return m;
}

GptConfig load_model(const std::string& spec) {
  namespace fs = std::filesystem;
  const fs::path p(spec);
  const auto presets = gpt_preset_names();
  if (std::find(presets.begin(), presets.end(), spec) != presets.end()) return gpt_preset(spec);
  const bool named_file = spec.find('/') != std::string::npos || p.extension() == ".toml" || p.extension() == ".json";
  if (!named_file && !fs::exists(p)) return gpt_preset(spec);  // the unknown-name error, listing the presets
  auto read = [](const fs::path& f) {
    auto text = read_file(f.string());
    TZ_CHECK(text, ConfigError, "cannot read model file '" + f.string() + "'");
    return std::move(*text);
  };
  if (fs::is_directory(p)) {
    TZ_CHECK(fs::exists(p / "config.json"), ConfigError, "model directory '" + spec + "' has no config.json");
    return parse_hf_config(read(p / "config.json"), "'" + (p / "config.json").string() + "'");
  }
  if (p.extension() == ".json") return parse_hf_config(read(p), "'" + spec + "'");
  TZ_CHECK(p.extension() == ".toml", ConfigError,
           "model '" + spec + "' is not a preset, a model file (*.toml), a Hugging Face config.json or a directory with one");
  const toml::table t = parse_toml(read(p), spec);
  GptConfig m;
  read_model_table(t, spec, "", m);
  if (m.name == "custom") m.name = p.stem().string();
  return m;
}

nlohmann::json model_json(const GptConfig& m) {
  nlohmann::json j = {{"name", m.name},         {"vocab", m.vocab},        {"context", m.context}, {"layers", m.layers},
                      {"channels", m.channels}, {"heads", m.heads},        {"kv_heads", m.kv()},   {"ffn", m.ffn_size()},
                      {"norm", norm_name(m.norm)}, {"norm_eps", m.norm_eps}, {"positions", positions_name(m.positions)},
                      {"rope_theta", m.rope_theta}, {"mlp", mlp_name(m.mlp)}, {"bias", bias_name(m.bias)}, {"tied", m.tied}};
  if (m.rope_scaling.factor > 0)
    j["rope_scaling"] = {{"factor", m.rope_scaling.factor},
                         {"low_freq_factor", m.rope_scaling.low_freq_factor},
                         {"high_freq_factor", m.rope_scaling.high_freq_factor},
                         {"original_context", m.rope_scaling.original_context}};
  return j;
}

GptConfig model_from_json(const nlohmann::json& j, const std::string& where) {
  try {
    auto count = [&](const char* key, const nlohmann::json& in) {
      const nlohmann::json& v = in.at(key);
      TZ_CHECK(v.is_number_integer() && v.get<std::int64_t>() >= 1 && v.get<std::int64_t>() <= std::numeric_limits<int>::max(), FormatError,
               where + ": model key '" + key + "' must be a positive integer");
      return v.get<int>();
    };
    GptConfig m{j.at("name").get<std::string>(), count("vocab", j), count("context", j), count("layers", j), count("channels", j),
                count("heads", j)};
    if (j.contains("kv_heads")) m.kv_heads = count("kv_heads", j);
    if (j.contains("ffn")) m.ffn = count("ffn", j);
    auto choice = [&](const char* key, auto initial, auto choices, auto name) {
      if (!j.contains(key)) return initial;
      return parse_choice(j.at(key).get<std::string>(), choices, name, where + ": model key '" + key + "'");
    };
    m.norm = choice("norm", m.norm, std::initializer_list<Norm>{Norm::layernorm, Norm::rmsnorm}, norm_name);
    m.positions = choice("positions", m.positions, std::initializer_list<Positions>{Positions::learned, Positions::rope}, positions_name);
    m.mlp = choice("mlp", m.mlp, std::initializer_list<Mlp>{Mlp::gelu, Mlp::swiglu}, mlp_name);
    m.bias = choice("bias", m.bias, std::initializer_list<Bias>{Bias::all, Bias::none, Bias::qkv}, bias_name);
    m.norm_eps = j.value("norm_eps", m.norm_eps);
    m.rope_theta = j.value("rope_theta", m.rope_theta);
    m.tied = j.value("tied", m.tied);
    if (j.contains("rope_scaling")) {
      const auto& r = j.at("rope_scaling");
      m.rope_scaling = {r.at("factor").get<double>(), r.at("low_freq_factor").get<double>(), r.at("high_freq_factor").get<double>(),
                        count("original_context", r)};
    }
    m.validate();
    return m;
  } catch (const nlohmann::json::exception& e) {
    TZ_THROW(FormatError, where + ": not tierzero's model description (" + e.what() + ")");
  } catch (const ConfigError& e) {
    TZ_THROW(FormatError, where + ": " + e.message());
  }
}

}  // namespace tierzero
