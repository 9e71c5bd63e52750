// Checks of numeric flags with messages a user understands (CLI11's own
// PositiveNumber says "Value 0 not in range 0.000000 to 1.797...e308"):
// the option name comes first in CLI11's report, then these words.
#pragma once
#include <CLI/CLI.hpp>
#include <cmath>
#include <string>

namespace tierzero::cli {

// A whole number >= min.
inline CLI::Validator at_least(long long min) {
  return CLI::Validator(
      [min](std::string& s) -> std::string {
        std::size_t used = 0;
        long long v = 0;
        try {
          v = std::stoll(s, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != s.size() || s.empty()) return "must be a whole number, got '" + s + "'";
        if (v < min) return "must be at least " + std::to_string(min) + ", got " + s;
        return "";
      },
      "INT>=" + std::to_string(min));
}

// A finite number > 0 (positive) or >= 0.
inline CLI::Validator finite_number(bool positive) {
  return CLI::Validator(
      [positive](std::string& s) -> std::string {
        std::size_t used = 0;
        double v = 0;
        try {
          v = std::stod(s, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != s.size() || s.empty() || !std::isfinite(v)) return "must be a finite number, got '" + s + "'";
        if (positive ? !(v > 0) : !(v >= 0)) return std::string(positive ? "must be positive" : "must be at least 0") + ", got " + s;
        return "";
      },
      positive ? "NUMBER>0" : "NUMBER>=0");
}

}  // namespace tierzero::cli
