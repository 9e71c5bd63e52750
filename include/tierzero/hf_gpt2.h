// Hugging Face transformers' GPT-2 layout (GPT2LMHeadModel): model.safetensors
// with its tensor names — [transformer.]wte.weight [V,C], wpe.weight [T,C],
// h.N.ln_1.{weight,bias}, h.N.attn.c_attn.{weight [C,3C],bias}, h.N.attn.c_proj,
// h.N.ln_2, h.N.mlp.c_fc {weight [C,4C]}, h.N.mlp.c_proj {weight [4C,C]},
// ln_f — whose linear weights are Conv1D's [in, out] (y = x W + b), the
// transpose of tierzero's [out, in]; and config.json (model_type gpt2,
// n_embd, n_head, n_layer, n_positions, vocab_size). Reading accepts names
// with and without the "transformer." prefix and ignores the attention
// mask buffers (attn.bias, attn.masked_bias) older files carry.
#pragma once
#include <string>
#include <vector>

#include "tierzero/gpt_config.h"

namespace tierzero {

// Writes dir/model.safetensors and dir/config.json (created if missing;
// each file written atomically). `params`: num_params floats, GptLayout order.
void write_hf_gpt2(const GptConfig& model, const std::vector<float>& params, const std::string& dir);
// Reads config.json; throws FormatError for a file that is not GPT-2's.
GptConfig read_hf_gpt2_config(const std::string& path);

// A model's shape and fp32 weights from wherever they are: a checkpoint
// (step or save directory), a tierzero safetensors export (its metadata
// records the shape), or a Hugging Face GPT-2 directory (config.json +
// model.safetensors) or its model.safetensors with config.json beside it.
struct ModelWeights {
  GptConfig model;
  std::vector<float> params;
};
ModelWeights load_model_weights(const std::string& path);

}  // namespace tierzero
