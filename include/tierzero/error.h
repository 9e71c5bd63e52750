// Typed exceptions for library code. Every throw records the file and line
// where the problem was found; tools/ turn them into a message and exit code 2
// (bad input) or 1 (internal failure). Library code never calls exit().
#pragma once
#include <stdexcept>
#include <string>

namespace tierzero {

// Base of every tierzero exception. what() is "file:line: message".
class Error : public std::runtime_error {
 public:
  Error(const std::string& message, const char* file, int line);
  // The message without the source location, for users.
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

// A configuration, command-line value or layout string the user gave is wrong.
class ConfigError : public Error { using Error::Error; };
// A topology does not match the job (rank count, fan-outs, detection).
class TopologyError : public Error { using Error::Error; };
// A collective was misused or the transport failed.
class CommError : public Error { using Error::Error; };
// A data or checkpoint file is malformed, truncated or of the wrong type.
class FormatError : public Error { using Error::Error; };

}  // namespace tierzero

#define TZ_THROW(Type, msg) throw Type((msg), __FILE__, __LINE__)
#define TZ_CHECK(cond, Type, msg) \
  do {                            \
    if (!(cond)) TZ_THROW(Type, msg); \
  } while (0)
