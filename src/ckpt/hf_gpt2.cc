#include "tierzero/hugging_face.h"

#include <nlohmann/json.hpp>

#include "ckpt/hf_names.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {
using nlohmann::json;

// One tensor of each layout: its HF name (without "transformer."), its
// tierzero name, and whether HF stores it transposed (Conv1D).
struct NameMap {
  std::string hf, ours;
  bool conv1d;
};

std::vector<NameMap> name_map(const GptConfig& m) {
  std::vector<NameMap> out = {{"wte.weight", "wte", false}, {"wpe.weight", "wpe", false}};
  for (int l = 0; l < m.layers; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    for (const NameMap& t : std::initializer_list<NameMap>{{"ln_1.weight", "ln1_w", false}, {"ln_1.bias", "ln1_b", false},
                                                            {"attn.c_attn.weight", "attn_w", true}, {"attn.c_attn.bias", "attn_b", false},
                                                            {"attn.c_proj.weight", "proj_w", true}, {"attn.c_proj.bias", "proj_b", false},
                                                            {"ln_2.weight", "ln2_w", false}, {"ln_2.bias", "ln2_b", false},
                                                            {"mlp.c_fc.weight", "fc_w", true}, {"mlp.c_fc.bias", "fc_b", false},
                                                            {"mlp.c_proj.weight", "fcproj_w", true}, {"mlp.c_proj.bias", "fcproj_b", false}})
      out.push_back({h + t.hf, h + t.ours, t.conv1d});
  }
  out.push_back({"ln_f.weight", "lnf_w", false});
  out.push_back({"ln_f.bias", "lnf_b", false});
  return out;
}

// [rows, cols] -> [cols, rows].
std::vector<float> transposed(const float* x, std::size_t rows, std::size_t cols) {
  std::vector<float> out(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) out[c * rows + r] = x[r * cols + c];
  return out;
}


}  // namespace

void write_hf_gpt2(const GptConfig& model, const std::vector<float>& params, const std::string& dir, const HfExportOptions& opt) {
  TZ_CHECK(model.family() == "gpt2", ConfigError,
           "the hf-gpt2 format holds GPT-2 models; " + model.name + " is a Llama-family model (export it with --safetensors)");
  const GptLayout layout(model);
  TZ_CHECK(params.size() == layout.num_params(), ConfigError, "write_hf_gpt2: parameters do not match the model");
  SafeTensorsFile out;
  for (const NameMap& n : name_map(model)) {
    const TensorInfo& t = layout.tensor(n.ours);
    const float* x = params.data() + t.offset;
    if (n.conv1d) {
      const std::vector<float> w = transposed(x, t.shape[0], t.shape[1]);
      out.tensors["transformer." + n.hf] = make_f32_tensor({t.shape[1], t.shape[0]}, w.data());
    } else {
      out.tensors["transformer." + n.hf] = make_f32_tensor(std::vector<std::int64_t>(t.shape.begin(), t.shape.end()), x);
    }
  }
  // The LM head is tied to wte; transformers re-ties it on load.
  const json config = {{"architectures", {"GPT2LMHeadModel"}},
                       {"model_type", "gpt2"},
                       {"vocab_size", model.vocab},
                       {"n_positions", model.context},
                       {"n_ctx", model.context},
                       {"n_embd", model.channels},
                       {"n_layer", model.layers},
                       {"n_head", model.heads},
                       {"n_inner", nullptr},
                       {"activation_function", "gelu_new"},
                       {"layer_norm_epsilon", 1e-5},
                       {"tie_word_embeddings", true},
                       {"bos_token_id", model.vocab - 1},
                       {"eos_token_id", model.vocab - 1},
                       {"torch_dtype", "float32"}};
  write_hf_dir(dir, out, config, opt);
}

bool has_hf_gpt2_names(const HasTensor& has) { return has("transformer.wte.weight") || has("wte.weight"); }

std::vector<StoredTensor> hf_gpt2_tensors(const GptConfig& model, const HasTensor& has) {
  const GptLayout layout(model);
  const std::string prefix = has("transformer.wte.weight") ? "transformer." : "";
  std::vector<StoredTensor> out;
  for (const NameMap& n : name_map(model)) {
    const TensorInfo& t = layout.tensor(n.ours);
    std::vector<std::int64_t> stored(t.shape.begin(), t.shape.end());
    if (n.conv1d) std::swap(stored[0], stored[1]);
    out.push_back({n.ours, {{prefix + n.hf, stored, n.conv1d}}});
  }
  return out;
}

}  // namespace tierzero
