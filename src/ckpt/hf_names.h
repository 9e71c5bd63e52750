// Where tierzero's tensors lie in files of other names (Hugging Face's
// layouts: tierzero/hugging_face.h), for the weights reader (weights.cc)
// and the exporters (hf_gpt2.cc, hf_llama.cc, hugging_face.cc).
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/safetensors.h"
#include "tierzero/hugging_face.h"
#include "tierzero/gpt_config.h"

namespace tierzero {

// One stored tensor holding rows of one of tierzero's: its name and shape
// as stored; a transposed one is stored [in, out] (GPT-2's Conv1D), the
// transpose of tierzero's [out, in].
struct StoredPart {
  std::string name;
  std::vector<std::int64_t> shape;
  bool transposed = false;
};
// tierzero's tensor `ours` (GptLayout's name) is its parts' rows, one part after another.
struct StoredTensor {
  std::string ours;
  std::vector<StoredPart> parts;
};

// Whether the file(s) hold a tensor of that name.
using HasTensor = std::function<bool(const std::string&)>;
// Whether the names are transformers' GPT-2's (hf_gpt2.cc) or the Llama family's (model.embed_tokens.weight; hf_llama.cc).
bool has_hf_gpt2_names(const HasTensor& has);
bool has_hf_llama_names(const HasTensor& has);
// Every tensor of `model` in GPT-2's names, with the "transformer." prefix when the file's names have it.
std::vector<StoredTensor> hf_gpt2_tensors(const GptConfig& model, const HasTensor& has);
// In the Llama family's (q/k/v rows fused into attn_w, gate/up into fc_w);
// ConfigError for a model the layout cannot hold.
std::vector<StoredTensor> hf_llama_tensors(const GptConfig& model);

// Writes `tensors` (F32) in opt's dtype and shards (tierzero/hugging_face.h),
// metadata format "pt", and config.json with torch_dtype set; each file
// atomically (a temporary name, synced, renamed); creates dir.
void write_hf_dir(const std::string& dir, SafeTensorsFile tensors, nlohmann::json config, const HfExportOptions& opt);

}  // namespace tierzero
