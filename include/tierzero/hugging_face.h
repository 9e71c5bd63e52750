// Hugging Face transformers' checkpoints: a directory of config.json
// (read by load_model, tierzero/gpt_config.h) and model.safetensors, or
// model.safetensors.index.json and the shards its weight_map names; tensors
// in F32, BF16 or F16.
//
// The GPT-2 layout (GPT2LMHeadModel): model.safetensors
// with its tensor names — [transformer.]wte.weight [V,C], wpe.weight [T,C],
// h.N.ln_1.{weight,bias}, h.N.attn.c_attn.{weight [C,3C],bias}, h.N.attn.c_proj,
// h.N.ln_2, h.N.mlp.c_fc {weight [C,4C]}, h.N.mlp.c_proj {weight [4C,C]},
// ln_f — whose linear weights are Conv1D's [in, out] (y = x W + b), the
// transpose of tierzero's [out, in]; and config.json (model_type gpt2,
// n_embd, n_head, n_layer, n_positions, vocab_size). Reading accepts names
// with and without the "transformer." prefix and ignores the attention
// mask buffers (attn.bias, attn.masked_bias) older files carry.
//
// The Llama-family layout (LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM): model.embed_tokens.weight [V,C]; per layer N
// model.layers.N.input_layernorm.weight [C], self_attn.q_proj [C,C],
// k_proj and v_proj [KV D, C] (with biases for Qwen2), o_proj [C,C],
// post_attention_layernorm, mlp.gate_proj and up_proj [F,C], down_proj
// [C,F]; model.norm.weight; lm_head.weight [V,C] (absent when tied). The
// weights are [out, in] as tierzero's; q/k/v are fused into attn_w and
// gate/up into fc_w, rows in that order, and the rotate-half RoPE order of
// q and k is tierzero's own.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tierzero/dtype.h"
#include "tierzero/gpt_config.h"

namespace tierzero {

// How an export stores its tensors: their dtype (fp32, bf16 or fp16; the
// values rounded to nearest even, config.json's torch_dtype to match), and
// the largest shard in bytes (0: one model.safetensors; otherwise
// model-0000K-of-0000N.safetensors, tensors in name order, with
// model.safetensors.index.json's weight_map, as transformers' save_pretrained
// writes them). A directory's other layout (the single file or the index)
// is removed, so that readers find one.
// The tokenizer an export ships beside the weights (hf_tokenizer_export):
// the files copied as they are, and the begin- and end-of-text tokens that
// config.json and generation_config.json name (bos_token_id, eos_token_id)
// and that a tokenizer_config.json written when none is copied names. Value type.
struct HfTokenizerExport {
  std::vector<std::string> files;  // paths: tokenizer.json, and tokenizer_config.json, special_tokens_map.json where beside it
  std::uint32_t vocab = 0;         // ids, special tokens included (at most the model's vocab_size)
  std::uint32_t bos_id = 0, eos_id = 0;
  std::string bos, eos;  // their text
};
// Reads the tokenizer at `path` (a tokenizer.json or its directory) as
// BpeTokenizer::load does, and throws as it does. The begin-of-text token is
// its begin_of_text(), else (GPT-2, Qwen) its end_of_text(), as their
// config.json files say; the end-of-text token is its end_of_text().
HfTokenizerExport hf_tokenizer_export(const std::string& path);

struct HfExportOptions {
  DType dtype = DType::f32;
  std::uint64_t max_shard_bytes = 0;
  std::optional<HfTokenizerExport> tokenizer;  // none: no tokenizer files, config.json's own token ids (GPT-2's 50256 style)
};

// Writes dir/model.safetensors, dir/config.json and dir/generation_config.json
// (created if missing; each file written atomically), and with
// opt.tokenizer its files (and a tokenizer_config.json naming PreTrainedTokenizerFast
// and the two tokens when it has none), the token ids in both configs; ConfigError
// when the tokenizer's vocabulary is larger than the model's. `params`: num_params floats, GptLayout order.
void write_hf_gpt2(const GptConfig& model, const std::vector<float>& params, const std::string& dir, const HfExportOptions& opt = {});
// Writes dir/model.safetensors (F32) and dir/config.json (LlamaForCausalLM,
// or Qwen2ForCausalLM for q/k/v biases) likewise; ConfigError for a model
// the layout cannot hold (LayerNorm, learned positions, GELU, all biases).
void write_hf_llama(const GptConfig& model, const std::vector<float>& params, const std::string& dir, const HfExportOptions& opt = {});
// Reads config.json; throws FormatError for a file that is not GPT-2's.
GptConfig read_hf_gpt2_config(const std::string& path);

// A model's shape and fp32 weights from wherever they are: a checkpoint
// (step or save directory), a tierzero safetensors export (its metadata
// records the shape), or a Hugging Face directory of either layout, or its
// model.safetensors with config.json beside it.
struct ModelWeights {
  GptConfig model;
  std::vector<float> params;
};
ModelWeights load_model_weights(const std::string& path);

}  // namespace tierzero
