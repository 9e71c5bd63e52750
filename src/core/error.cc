#include "tierzero/error.h"

#include <cstring>

namespace tierzero {

namespace {
std::string located(const std::string& message, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  return std::string(base ? base + 1 : file) + ":" + std::to_string(line) + ": " + message;
}
}  // namespace

Error::Error(const std::string& message, const char* file, int line)
    : std::runtime_error(located(message, file, line)), message_(message) {}

}  // namespace tierzero
