// Hugging Face directories: writing them, and finding a model's shape and
// weights wherever they are (weights.cc reads them).
#include "tierzero/hugging_face.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ckpt/hf_names.h"
#include "ckpt/safetensors_reader.h"
#include "core/read_file.h"
#include "model/model_file.h"
#include "tierzero/checkpoint.h"
#include "tierzero/error.h"
#include "tierzero/state_reader.h"
#include "tierzero/tokenizer.h"

namespace tierzero {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// Writes `text` to dir/name atomically.
void write_atomically(const fs::path& dir, const std::string& name, const std::string& text) {
  const std::string tmp = (dir / (name + ".tmp")).string();
  write_file_synced(tmp, text.data(), text.size());
  fs::rename(tmp, dir / name);
}

void write_shard(const fs::path& path, SafeTensorsFile shard) {
  shard.metadata["format"] = "pt";
  write_safetensors(path.string(), shard);
}

// Copies the tokenizer's files into `dir` (tokenizer.json is named so
// whatever its name was), writes a tokenizer_config.json when none came
// with them, and puts the token ids in `config`.
void write_tokenizer(const fs::path& dir, const HfTokenizerExport& t, json& config) {
  TZ_CHECK(t.vocab <= config.at("vocab_size").get<std::uint64_t>(), ConfigError,
           "the tokenizer's vocabulary of " + std::to_string(t.vocab) + " does not fit the model's " + config.at("vocab_size").dump());
  bool has_config = false;
  for (std::size_t k = 0; k < t.files.size(); ++k) {
    const auto text = read_file(t.files[k]);
    TZ_CHECK(text, ConfigError, "cannot read tokenizer file '" + t.files[k] + "'");
    const std::string name = k == 0 ? "tokenizer.json" : fs::path(t.files[k]).filename().string();
    has_config = has_config || name == "tokenizer_config.json";
    write_atomically(dir, name, *text);
  }
  // transformers' AutoTokenizer then builds the tokenizer from tokenizer.json as it is, with these two tokens.
  if (!has_config)
    write_atomically(dir, "tokenizer_config.json",
                     json{{"tokenizer_class", "PreTrainedTokenizerFast"}, {"bos_token", t.bos}, {"eos_token", t.eos},
                          {"clean_up_tokenization_spaces", false}}
                             .dump(2) + "\n");
  config["bos_token_id"] = t.bos_id;
  config["eos_token_id"] = t.eos_id;
}
}  // namespace

void write_hf_dir(const std::string& dir, SafeTensorsFile tensors, json config, const HfExportOptions& opt) {
  TZ_CHECK(is_float(opt.dtype), ConfigError, "an export's dtype must be fp32, bf16 or fp16");
  if (opt.dtype != DType::f32) {
    for (auto& [name, t] : tensors.tensors) {
      const std::vector<float> v = t.as_f32();
      t.dtype = opt.dtype == DType::bf16 ? "BF16" : "F16";
      t.data.assign(v.size() * 2, std::byte{0});
      from_f32(opt.dtype, v.data(), t.data.data(), v.size());
    }
  }
  config["torch_dtype"] = opt.dtype == DType::f32 ? "float32" : opt.dtype == DType::bf16 ? "bfloat16" : "float16";
  fs::create_directories(dir);
  const fs::path d(dir);
  std::uint64_t total = 0;
  for (const auto& [name, t] : tensors.tensors) total += t.data.size();
  if (opt.max_shard_bytes == 0 || total <= opt.max_shard_bytes) {
    write_shard(d / "model.safetensors", std::move(tensors));
    fs::remove(d / "model.safetensors.index.json");
  } else {
    // Tensors in name order, a new shard when the next would pass the limit (a larger tensor gets its own).
    std::vector<SafeTensorsFile> shards(1);
    std::uint64_t in_shard = 0;
    for (auto& [name, t] : tensors.tensors) {
      if (in_shard > 0 && in_shard + t.data.size() > opt.max_shard_bytes) shards.emplace_back(), in_shard = 0;
      in_shard += t.data.size();
      shards.back().tensors[name] = std::move(t);
    }
    json map = json::object();
    auto file = [&](std::size_t k) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, shards.size());
      return std::string(name);
    };
    for (std::size_t k = 0; k < shards.size(); ++k) {
      for (const auto& [name, t] : shards[k].tensors) map[name] = file(k);
      write_shard(d / file(k), std::move(shards[k]));
    }
    write_atomically(d, "model.safetensors.index.json", json{{"metadata", {{"total_size", total}}}, {"weight_map", map}}.dump(2) + "\n");
    fs::remove(d / "model.safetensors");
  }
  if (opt.tokenizer) write_tokenizer(d, *opt.tokenizer, config);
  write_atomically(d, "config.json", config.dump(2) + "\n");
  // What transformers' generate() reads: the model's token ids (save_pretrained writes the same from the model's config).
  json generation = {{"_from_model_config", true}};
  for (const char* key : {"bos_token_id", "eos_token_id"})
    if (config.contains(key)) generation[key] = config.at(key);
  write_atomically(d, "generation_config.json", generation.dump(2) + "\n");
}

HfTokenizerExport hf_tokenizer_export(const std::string& path) {
  const BpeTokenizer t = BpeTokenizer::load(path);
  const fs::path json_file = fs::is_directory(path) ? fs::path(path) / "tokenizer.json" : fs::path(path);
  TZ_CHECK(json_file.extension() == ".json", ConfigError,
           "'" + path + "' is not a Hugging Face tokenizer.json: an export ships tokenizer.json files (GPT-2's encoder.json + vocab.bpe "
           "and tiktoken files are not what transformers reads)");
  HfTokenizerExport out;
  out.files.push_back(json_file.string());
  for (const char* name : {"tokenizer_config.json", "special_tokens_map.json"})
    if (fs::exists(json_file.parent_path() / name)) out.files.push_back((json_file.parent_path() / name).string());
  out.vocab = t.vocab();
  out.eos_id = t.end_of_text();
  out.bos_id = t.begin_of_text().value_or(out.eos_id);
  out.bos = t.decode({out.bos_id}), out.eos = t.decode({out.eos_id});
  return out;
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

GptConfig read_hf_gpt2_config(const std::string& path) {
  const GptConfig m = hf_config(path);
  TZ_CHECK(m.family() == "gpt2", FormatError, "'" + path + "': not a GPT-2 config (" + m.name + ": only GPT-2 weights are imported)");
  return m;
}

ModelWeights load_model_weights(const std::string& path) {
  const fs::path p(path);
  const auto whole = [](const std::string& at, const GptConfig& m) {
    return ModelWeights{m, read_whole(*open_weights(at, m), StatePart::master, m.num_params())};
  };
  if (fs::is_directory(p) && fs::exists(p / "config.json")) return whole(path, hf_config(p / "config.json"));  // a Hugging Face directory
  if (fs::is_directory(p)) {  // a checkpoint
    CheckpointReader ckpt(path);
    return {ckpt.meta().model, ckpt.read_full_master()};
  }
  const SafeTensorsReader f(path);
  const std::string where = "'" + path + "'";
  const HasTensor has = [&f](const std::string& name) { return f.header().tensors.count(name) > 0; };
  if (has_hf_gpt2_names(has) || has_hf_llama_names(has)) {
    const fs::path config = p.parent_path() / "config.json";
    TZ_CHECK(fs::exists(config), FormatError, where + " has Hugging Face tensors but no config.json beside it (it gives the model's shape)");
    return whole(path, hf_config(config));
  }
  const auto it = f.header().metadata.find("model");
  TZ_CHECK(it != f.header().metadata.end(), FormatError,
           where + " records no model shape: expected a tierzero export (metadata 'model') or Hugging Face tensors");
  return whole(path, model_from_metadata(it->second, where));
}

}  // namespace tierzero
