// Hugging Face directories: reading their (possibly sharded) weights,
// writing them, and finding a model's shape and weights wherever they are.
#include "tierzero/hugging_face.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ckpt/hf_names.h"
#include "core/read_file.h"
#include "model/model_file.h"
#include "tierzero/checkpoint.h"
#include "tierzero/error.h"

namespace tierzero {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<float> hf_tensor(const SafeTensorsFile& f, const std::string& name, const std::vector<std::int64_t>& shape,
                             const GptConfig& model, const std::string& where) {
  const auto it = f.tensors.find(name);
  TZ_CHECK(it != f.tensors.end(), FormatError,
           where + " has no tensor '" + name + "' (is it " + model.name + " with " + std::to_string(model.layers) + " layers?)");
  TZ_CHECK(it->second.shape == shape, FormatError, where + ": tensor '" + name + "' has the wrong shape for model " + model.name);
  std::vector<float> v = it->second.as_f32();
  const auto bad = std::find_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); });
  TZ_CHECK(bad == v.end(), FormatError, where + ": tensor '" + name + "' holds a non-finite value at element " + std::to_string(bad - v.begin()));
  return v;
}

SafeTensorsFile read_hf_weights(const std::string& dir) {
  const fs::path d(dir), index = d / "model.safetensors.index.json";
  if (!fs::exists(index)) return read_safetensors((d / "model.safetensors").string());
  const std::string where = "'" + index.string() + "'";
  json j;
  try {
    auto text = read_file(index.string());
    TZ_CHECK(text, FormatError, "cannot read " + where);
    j = json::parse(*text);
  } catch (const json::exception& e) {
    TZ_THROW(FormatError, where + " is not valid JSON: " + e.what());
  }
  TZ_CHECK(j.is_object() && j.contains("weight_map") && j.at("weight_map").is_object(), FormatError, where + " has no weight_map object");
  std::map<std::string, std::vector<std::string>> by_shard;
  for (auto it = j.at("weight_map").begin(); it != j.at("weight_map").end(); ++it) {
    TZ_CHECK(it.value().is_string(), FormatError, where + ": weight_map['" + it.key() + "'] must name a file");
    const std::string shard = it.value().get<std::string>();
    TZ_CHECK(shard.find('/') == std::string::npos, FormatError, where + ": shard '" + shard + "' is not a file beside the index");
    by_shard[shard].push_back(it.key());
  }
  SafeTensorsFile out;
  for (const auto& [shard, names] : by_shard) {
    SafeTensorsFile part = read_safetensors((d / shard).string());
    for (const std::string& name : names) {
      auto t = part.tensors.find(name);
      TZ_CHECK(t != part.tensors.end(), FormatError, where + " puts '" + name + "' in " + shard + ", which does not hold it");
      out.tensors[name] = std::move(t->second);
    }
  }
  return out;
}

std::vector<float> hf_params(const SafeTensorsFile& f, const GptConfig& model, const std::string& where) {
  const bool gpt2 = has_hf_gpt2_names(f);
  TZ_CHECK(gpt2 || has_hf_llama_names(f), FormatError, where + " holds neither GPT-2 nor Llama-family tensors in Hugging Face's names");
  TZ_CHECK(gpt2 == (model.family() == "gpt2"), FormatError,
           where + " holds " + (gpt2 ? "GPT-2" : "Llama-family") + " tensors, but the model is " + model.describe());
  return gpt2 ? hf_gpt2_params(f, model, where) : hf_llama_params(f, model, where);
}

void write_hf_dir(const std::string& dir, SafeTensorsFile tensors, const json& config) {
  tensors.metadata["format"] = "pt";
  fs::create_directories(dir);
  const fs::path d(dir);
  write_safetensors((d / "model.safetensors").string(), tensors);
  const std::string text = config.dump(2) + "\n";
  const std::string tmp = (d / "config.json.tmp").string();
  write_file_synced(tmp, text.data(), text.size());
  fs::rename(tmp, d / "config.json");
}

namespace {
GptConfig model_from_metadata(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    TZ_THROW(FormatError, where + ": its 'model' metadata is not JSON (" + e.what() + ")");
  }
  return model_from_json(j, where);
}

// config.json as a FormatError when it does not describe a trainable model.
GptConfig hf_config(const fs::path& path) {
  const std::string where = "'" + path.string() + "'";
  auto text = read_file(path.string());
  TZ_CHECK(text, FormatError, "cannot read " + where);
  try {
    return parse_hf_config(*text, where);
  } catch (const ConfigError& e) {
    TZ_THROW(FormatError, e.message());
  }
}
}  // namespace

ModelWeights load_model_weights(const std::string& path) {
  const fs::path p(path);
  if (fs::is_directory(p) && fs::exists(p / "config.json")) {  // a Hugging Face directory
    const GptConfig m = hf_config(p / "config.json");
    return {m, hf_params(read_hf_weights(path), m, "'" + path + "'")};
  }
  if (fs::is_directory(p)) {  // a checkpoint
    const CheckpointReader ckpt(path);
    return {ckpt.meta().model, ckpt.read_full_master()};
  }
  const SafeTensorsFile f = read_safetensors(path);
  const std::string where = "'" + path + "'";
  if (has_hf_gpt2_names(f) || has_hf_llama_names(f)) {
    const fs::path config = p.parent_path() / "config.json";
    TZ_CHECK(fs::exists(config), FormatError, where + " has Hugging Face tensors but no config.json beside it (it gives the model's shape)");
    const GptConfig m = hf_config(config);
    return {m, hf_params(f, m, where)};
  }
  const auto it = f.metadata.find("model");
  TZ_CHECK(it != f.metadata.end(), FormatError,
           where + " records no model shape: expected a tierzero export (metadata 'model') or Hugging Face tensors");
  const GptConfig m = model_from_metadata(it->second, where);
  return {m, load_safetensors_params(path, m)};
}

}  // namespace tierzero
