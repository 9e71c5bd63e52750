#include "sharded/swap_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ckpt/page_buffer.h"
#include "sharded/faults.h"
#include "tierzero/error.h"
#include "tierzero/flight_recorder.h"

namespace tierzero {

SwapBlocks SwapBlocks::of(const std::vector<std::size_t>& shard, std::size_t element_bytes) {
  SwapBlocks b;
  for (std::size_t n : shard) {
    const std::size_t padded = (n * element_bytes + kPageAlign - 1) / kPageAlign * kPageAlign;
    b.offset.push_back(b.total), b.bytes.push_back(padded);
    b.total += padded, b.largest = std::max(b.largest, padded);
  }
  return b;
}

SwapFile::SwapFile(const std::string& dir, const std::string& state, const std::string& option, int rank, std::size_t bytes)
    : state_(state) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char name[128];
  std::snprintf(name, sizeof name, "tierzero-%s-%d-rank-%05d.swap", state.c_str(), static_cast<int>(::getpid()), rank);
  const std::string path = (std::filesystem::path(dir) / name).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
  if (fd_ < 0 && errno == EINVAL) fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);  // no O_DIRECT here (tmpfs)
  TZ_CHECK(fd_ >= 0, ConfigError, option + " nvme: cannot create '" + path + "': " + std::strerror(errno));
  ::unlink(path.c_str());  // scratch: gone with the process, however it ends
  const int e = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes));
  if (e != 0 && e != EOPNOTSUPP && e != EINVAL) {
    ::close(fd_);
    TZ_THROW(ConfigError, option + " nvme: '" + dir + "' cannot hold the " + state + " swap file's " + std::to_string(bytes) +
                              " bytes for rank " + std::to_string(rank) + ": " + std::strerror(e));
  }
  thread_ = std::thread([this] { run(); });
}

SwapFile::~SwapFile() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  ::close(fd_);
}

std::uint64_t SwapFile::submit(bool write, void* buf, std::size_t bytes, std::size_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.push_back({write, buf, bytes, offset});
  cv_.notify_all();
  return ++submitted_;
}

void SwapFile::wait(std::uint64_t job, int unit) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto ready = [&] { return done_ >= job || !error_.empty(); };
  if (!ready()) {
    const FlightActivityScope io(FlightActivity::offload_io, unit);
    cv_.wait(lock, ready);
  }
  TZ_CHECK(error_.empty(), Error, error_);
}

void SwapFile::run() {
  for (;;) {
    Job j{};
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      j = jobs_.front();
      jobs_.pop_front();
    }
    stall_io_if_asked();  // fault injection (sharded/faults.h)
    std::string problem;
    for (std::size_t at = 0; at < j.bytes && problem.empty();) {
      char* p = static_cast<char*>(j.buf) + at;
      const ssize_t n = j.write ? ::pwrite(fd_, p, j.bytes - at, static_cast<off_t>(j.offset + at))
                                : ::pread(fd_, p, j.bytes - at, static_cast<off_t>(j.offset + at));
      if (n > 0) at += static_cast<std::size_t>(n);
      else if (n < 0 && errno == EINTR) continue;
      else problem = "the " + state_ + " swap file: " + (j.write ? "write" : "read") + " failed: " +
                     (n == 0 ? std::string("unexpected end of file") : std::strerror(errno));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!problem.empty() && error_.empty()) error_ = problem;
      ++done_;
    }
    cv_.notify_all();
  }
}

}  // namespace tierzero
