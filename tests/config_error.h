// The message of the ConfigError a call throws, for tests of refusals.
#pragma once
#include <string>

#include "tierzero/error.h"

namespace tierzero::test {

// f()'s ConfigError message, or "(accepted)" when it throws none.
template <class F>
std::string config_error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.message();
  }
  return "(accepted)";
}

}  // namespace tierzero::test
