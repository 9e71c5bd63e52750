// The message of the error a call throws, for tests of refusals.
#pragma once
#include <string>
#include <utility>

#include "tierzero/error.h"

namespace tierzero::test {

// f()'s message when it throws an E, or "(accepted)" when it throws nothing
// (any other exception passes through and fails the test).
template <class E, class F>
std::string message_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const E& e) {
    return e.message();
  }
  return "(accepted)";
}

// f()'s ConfigError message, or "(accepted)" when it throws none.
template <class F>
std::string config_error_of(F&& f) {
  return message_of<ConfigError>(std::forward<F>(f));
}

}  // namespace tierzero::test
