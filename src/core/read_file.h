// Reading a whole file into memory, for the parsers of outside input
// (configs, system files, tokenizer files, checkpoints' metadata): each
// caller names what it read in its own error.
#pragma once
#include <optional>
#include <string>

namespace tierzero {

// The file's bytes, or nullopt when it cannot be opened or read.
std::optional<std::string> read_file(const std::string& path);

}  // namespace tierzero
