// Hugging Face checkpoints' tensors (tierzero/hugging_face.h gives the
// layouts), for the readers and writers of exports and Hugging Face
// directories (hugging_face.cc, hf_gpt2.cc, hf_llama.cc, checkpoint.cc).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/safetensors.h"
#include "tierzero/hugging_face.h"
#include "tierzero/gpt_config.h"

namespace tierzero {

// Whether the file names its tensors as transformers' GPT-2 does (hf_gpt2.cc).
bool has_hf_gpt2_names(const SafeTensorsFile& f);
// The parameters in GptLayout order; throws FormatError naming `where` and
// the tensor when one is missing, misshapen or not finite.
std::vector<float> hf_gpt2_params(const SafeTensorsFile& f, const GptConfig& model, const std::string& where);
// Whether the file names its tensors as transformers' Llama family does (model.embed_tokens.weight; hf_llama.cc).
bool has_hf_llama_names(const SafeTensorsFile& f);
// The same for a Llama-family model (q/k/v rows fused into attn_w, gate/up into fc_w).
std::vector<float> hf_llama_params(const SafeTensorsFile& f, const GptConfig& model, const std::string& where);

// The rest in hugging_face.cc. The fp32 values of tensor `name`, which must
// exist, have `shape` and hold finite values (FormatError naming `where`,
// the tensor and `model` otherwise).
std::vector<float> hf_tensor(const SafeTensorsFile& f, const std::string& name, const std::vector<std::int64_t>& shape,
                             const GptConfig& model, const std::string& where);
// The tensors of a Hugging Face directory: model.safetensors, or the shards
// that model.safetensors.index.json's weight_map names (FormatError for a
// missing shard, a tensor in two shards or a malformed index).
SafeTensorsFile read_hf_weights(const std::string& dir);
// The parameters of `model` from a file of either family's names.
std::vector<float> hf_params(const SafeTensorsFile& f, const GptConfig& model, const std::string& where);
// Writes `tensors` (F32) in opt's dtype and shards (tierzero/hugging_face.h),
// metadata format "pt", and config.json with torch_dtype set; each file
// atomically (a temporary name, synced, renamed); creates dir.
void write_hf_dir(const std::string& dir, SafeTensorsFile tensors, nlohmann::json config, const HfExportOptions& opt);

}  // namespace tierzero
