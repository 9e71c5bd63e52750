// A file that a StepLog appends whole chunks to: each append is one
// write(2) of everything the step produced, so a run killed between steps
// leaves only whole records; an append that fails (disk full) is cut back
// to the file's last good size, reported once on stderr, and ends the log.
// One thread; owns its descriptor.
#pragma once
#include <string>
#include <string_view>

namespace tierzero::cli {

class LogFile {
 public:
  // Opens `path` for appending (`exclusive`: creates it and fails when it
  // exists). Throws ConfigError naming `what` and the path when it cannot.
  LogFile(const std::string& path, const std::string& what, bool exclusive);
  ~LogFile();
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;
  // False once a write has failed (the file keeps what came before it).
  bool append(std::string_view bytes);
  const std::string& path() const { return path_; }

 private:
  std::string path_, what_;
  int fd_ = -1;
};

}  // namespace tierzero::cli
