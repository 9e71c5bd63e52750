// Hugging Face transformers' Llama-family layout (tierzero/hugging_face.h):
// tensor names, import into tierzero's fused layout, and export.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "ckpt/hf_names.h"
#include "tierzero/error.h"
#include "tierzero/hugging_face.h"

namespace tierzero {

namespace {
// Whether the layout can hold the model: RMSNorm, RoPE, SwiGLU, biases none or on q/k/v.
void check_expressible(const GptConfig& m) {
  TZ_CHECK(m.norm == Norm::rmsnorm && m.positions == Positions::rope && m.mlp == Mlp::swiglu && m.bias != Bias::all, ConfigError,
           "the Hugging Face Llama layout holds RMSNorm, RoPE and SwiGLU models with biases none or qkv; " + m.describe() + " is not one");
}

// Every tensor of the model in both namings, in tierzero's order.
std::vector<StoredTensor> fused_tensors(const GptConfig& model) {
  const std::int64_t C = model.channels, F = model.ffn_size(), KVD = static_cast<std::int64_t>(model.kv()) * model.head_size(),
                     V = model.vocab;
  std::vector<StoredTensor> out = {{"wte", {{"model.embed_tokens.weight", {V, C}}}}};
  for (int l = 0; l < model.layers; ++l) {
    const std::string h = "model.layers." + std::to_string(l) + ".", ours = "h." + std::to_string(l) + ".";
    out.push_back({ours + "ln1_w", {{h + "input_layernorm.weight", {C}}}});
    out.push_back({ours + "attn_w", {{h + "self_attn.q_proj.weight", {C, C}}, {h + "self_attn.k_proj.weight", {KVD, C}},
                                     {h + "self_attn.v_proj.weight", {KVD, C}}}});
    if (model.qkv_bias())
      out.push_back({ours + "attn_b", {{h + "self_attn.q_proj.bias", {C}}, {h + "self_attn.k_proj.bias", {KVD}},
                                       {h + "self_attn.v_proj.bias", {KVD}}}});
    out.push_back({ours + "proj_w", {{h + "self_attn.o_proj.weight", {C, C}}}});
    out.push_back({ours + "ln2_w", {{h + "post_attention_layernorm.weight", {C}}}});
    out.push_back({ours + "fc_w", {{h + "mlp.gate_proj.weight", {F, C}}, {h + "mlp.up_proj.weight", {F, C}}}});
    out.push_back({ours + "fcproj_w", {{h + "mlp.down_proj.weight", {C, F}}}});
  }
  out.push_back({"lnf_w", {{"model.norm.weight", {C}}}});
  if (!model.tied) out.push_back({"lm_head", {{"lm_head.weight", {V, C}}}});
  return out;
}

std::int64_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}
}  // namespace

bool has_hf_llama_names(const HasTensor& has) { return has("model.embed_tokens.weight"); }

std::vector<StoredTensor> hf_llama_tensors(const GptConfig& model) {
  check_expressible(model);
  return fused_tensors(model);
}

void write_hf_llama(const GptConfig& model, const std::vector<float>& params, const std::string& dir, const HfExportOptions& opt) {
  const std::vector<StoredTensor> tensors = hf_llama_tensors(model);
  const GptLayout layout(model);
  TZ_CHECK(params.size() == layout.num_params(), ConfigError, "write_hf_llama: parameters do not match the model");
  SafeTensorsFile out;
  for (const StoredTensor& t : tensors) {
    const float* x = params.data() + layout.tensor(t.ours).offset;
    for (const StoredPart& p : t.parts) {
      out.tensors[p.name] = make_f32_tensor(p.shape, x);
      x += numel(p.shape);
    }
  }
  // Qwen2 is the architecture whose q/k/v projections carry biases.
  const bool qwen2 = model.bias == Bias::qkv;
  nlohmann::json config = {{"architectures", {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
                           {"model_type", qwen2 ? "qwen2" : "llama"},
                           {"vocab_size", model.vocab},
                           {"max_position_embeddings", model.context},
                           {"num_hidden_layers", model.layers},
                           {"hidden_size", model.channels},
                           {"num_attention_heads", model.heads},
                           {"num_key_value_heads", model.kv()},
                           {"intermediate_size", model.ffn_size()},
                           {"hidden_act", "silu"},
                           {"rms_norm_eps", model.norm_eps},
                           {"rope_theta", model.rope_theta},
                           {"rope_scaling", nullptr},
                           {"tie_word_embeddings", model.tied},
                           {"torch_dtype", "float32"}};
  if (!qwen2) config["attention_bias"] = false;
  if (model.rope_scaling.factor > 0)
    config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", model.rope_scaling.factor},
                              {"low_freq_factor", model.rope_scaling.low_freq_factor},
                              {"high_freq_factor", model.rope_scaling.high_freq_factor},
                              {"original_max_position_embeddings", model.rope_scaling.original_context}};
  write_hf_dir(dir, std::move(out), config, opt);
}

}  // namespace tierzero
