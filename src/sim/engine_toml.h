// The keys of an engine file (data/engines/*.toml, docs/simulator.md
// "Engines"), applied over an EngineProfile's current values; each key may
// be followed by KEY_source. Internal: engine files and the corpus's
// overrides read through it.
#pragma once
#include <string>
#include <toml++/toml.h>

#include "tierzero/engine.h"

namespace tierzero {

// ConfigError naming `where` and the key for an unknown key or a value out of range.
void read_engine_keys(const toml::table& t, EngineProfile& e, const std::string& where);

}  // namespace tierzero
