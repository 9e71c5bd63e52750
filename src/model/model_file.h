// Model descriptions read from files (implemented in model_file.cc): the
// keys of a TOML table (a model file, or a run config's [model] table) and
// a Hugging Face config.json. Internal: load_model (tierzero/gpt_config.h)
// is the public entry point.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <toml++/toml.h>

#include "tierzero/gpt_config.h"

namespace tierzero {

// Reads the model keys of `t` into `m` (docs/models.md): `preset` first
// (the start), then every other key; `prefix` ("model." or "") names the
// table's keys in errors and `origin` the file. Unknown keys, wrong types
// and inconsistent shapes are ConfigErrors naming origin and key.
void read_model_table(const toml::table& t, const std::string& origin, const std::string& prefix, GptConfig& m);
// Parses a Hugging Face config.json; ConfigError naming `origin` and the key
// for a missing, unknown or inconsistent key or an unsupported architecture.
GptConfig parse_hf_config(const std::string& text, const std::string& origin);

// The model description as checkpoints and exports record it (meta.json's
// "model", docs/formats.md): every field, by the names of docs/models.md.
nlohmann::json model_json(const GptConfig& m);
// Reads it back; keys a file written before the Llama family lacks take
// GPT-2's values. FormatError naming `where` for a malformed description.
GptConfig model_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace tierzero
