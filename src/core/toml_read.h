// Parses TOML text, turning toml++'s parse errors into a ConfigError
// "origin:line: description". Internal.
#pragma once
#include <sstream>
#include <string>
#include <string_view>
#include <toml++/toml.h>

#include "tierzero/error.h"

namespace tierzero {

inline toml::table parse_toml(std::string_view text, const std::string& origin) {
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << origin << ":" << e.source().begin.line << ": " << e.description();
    TZ_THROW(ConfigError, os.str());
  }
}

}  // namespace tierzero
