// Data files compiled into the library (data/systems, data/devices,
// data/engines, data/plans and data/published-runs.toml), so that presets,
// strategies and the corpus need no file at run time: CMake generates the definition
// (embedded_data.cc in the build tree) from the files themselves.
#pragma once
#include <string_view>
#include <utility>
#include <vector>

namespace tierzero {

// (name, text) of every file of `group` ("systems", "devices", "engines",
// "plans", "corpus"), the name being the file's without its extension, sorted.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_files(std::string_view group);

}  // namespace tierzero
