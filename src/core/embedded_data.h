// Data files compiled into the library (data/systems, data/devices,
// data/engines, data/model-code, data/plans and data/published-runs.toml), so that presets,
// strategies and the corpus need no file at run time: CMake generates the definition
// (embedded_data.cc in the build tree) from the files themselves.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tierzero {

// (name, text) of every file of `group` ("systems", "devices", "engines",
// "model-code", "plans", "corpus"), the name being the file's without its
// extension, sorted.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_files(std::string_view group);

// The names of `group`'s files, sorted.
inline std::vector<std::string> embedded_names(std::string_view group) {
  std::vector<std::string> names;
  for (const auto& [name, text] : embedded_files(group)) names.emplace_back(name);
  return names;
}

// The text of `group`'s file `name`; nullopt when the group has none of that name.
inline std::optional<std::string_view> embedded_text(std::string_view group, std::string_view name) {
  for (const auto& [file, text] : embedded_files(group))
    if (file == name) return text;
  return std::nullopt;
}

}  // namespace tierzero
