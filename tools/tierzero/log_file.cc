#include "log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tierzero/error.h"

namespace tierzero::cli {

LogFile::LogFile(const std::string& path, const std::string& what, bool exclusive) : path_(path), what_(what) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (exclusive ? O_EXCL : 0), 0644);
  TZ_CHECK(fd_ >= 0, ConfigError, "cannot write " + what + " '" + path + "' (" + std::strerror(errno) + ")");
}

LogFile::~LogFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool LogFile::append(std::string_view bytes) {
  if (fd_ < 0) return false;
  struct stat st {};
  const off_t good = ::fstat(fd_, &st) == 0 ? st.st_size : -1;
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      if (good >= 0) (void)::ftruncate(fd_, good);  // no torn record before anything later
      std::fprintf(stderr, "tierzero: warning: stopped writing %s '%s' (%s); the file keeps the steps before\n", what_.c_str(),
                   path_.c_str(), std::strerror(err));
      ::close(fd_);
      fd_ = -1;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace tierzero::cli
