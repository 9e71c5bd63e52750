// Parses TOML text, turning toml++'s parse errors into a ConfigError
// "origin:line: description", and reads typed keys with errors naming
// origin and key. Internal.
#pragma once
#include <cstdint>
#include <limits>
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

// Key `key` of type T (double also reads an integer); ConfigError naming origin and key otherwise.
template <class T>
T get(const toml::node& n, const std::string& key, const std::string& origin);

// An integer key that must fit in [lo, hi].
inline std::int64_t get_int(const toml::node& n, const std::string& key, const std::string& origin, std::int64_t lo,
                            std::int64_t hi = std::numeric_limits<int>::max()) {
  const std::int64_t v = get<std::int64_t>(n, key, origin);
  const std::string range = hi == std::numeric_limits<std::int64_t>::max()
                                ? "at least " + std::to_string(lo)
                                : "between " + std::to_string(lo) + " and " + std::to_string(hi);
  TZ_CHECK(v >= lo && v <= hi, ConfigError, origin + ": key '" + key + "' must be " + range + ", got " + std::to_string(v));
  return v;
}

template <class T>
T get(const toml::node& n, const std::string& key, const std::string& origin) {
  if constexpr (std::is_same_v<T, double>) {
    if (auto v = n.value<double>()) return *v;
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    if (n.is_integer()) return *n.value<std::int64_t>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (n.is_boolean()) return *n.value<bool>();
  } else {
    if (auto v = n.value<std::string>()) return *v;
  }
  TZ_THROW(ConfigError, origin + ": key '" + key + "' has the wrong type");
}

}  // namespace tierzero
