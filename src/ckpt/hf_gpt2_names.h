// The GPT-2 tensors of a safetensors file in Hugging Face's names
// (tierzero/hf_gpt2.h gives the layout), for the readers of exports and
// Hugging Face directories (hf_gpt2.cc, checkpoint.cc). Implemented in hf_gpt2.cc.
#pragma once
#include <string>
#include <vector>

#include "ckpt/safetensors.h"
#include "tierzero/gpt_config.h"

namespace tierzero {

// Whether the file names its tensors as transformers' GPT-2 does.
bool has_hf_gpt2_names(const SafeTensorsFile& f);
// The parameters in GptLayout order; throws FormatError naming `where` and
// the tensor when one is missing, misshapen or not finite.
std::vector<float> hf_gpt2_params(const SafeTensorsFile& f, const GptConfig& model, const std::string& where);

}  // namespace tierzero
