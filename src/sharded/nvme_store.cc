#include "sharded/nvme_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "ckpt/page_buffer.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// Reads and writes of whole blocks, in the order submitted, on one thread.
class IoThread {
 public:
  explicit IoThread(int fd) : fd_(fd), thread_([this] { run(); }) {}
  ~IoThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // Returns the job's number; wait(number) blocks until it and those before it are done.
  std::uint64_t submit(bool write, void* buf, std::size_t bytes, std::size_t offset) {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back({write, buf, bytes, offset});
    cv_.notify_all();
    return ++submitted_;
  }
  void wait(std::uint64_t job) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_ >= job || !error_.empty(); });
    TZ_CHECK(error_.empty(), Error, error_);
  }

 private:
  struct Job {
    bool write;
    void* buf;
    std::size_t bytes, offset;
  };
  void run() {
    for (;;) {
      Job j{};
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        j = jobs_.front();
        jobs_.pop_front();
      }
      std::string problem;
      for (std::size_t at = 0; at < j.bytes && problem.empty();) {
        char* p = static_cast<char*>(j.buf) + at;
        const ssize_t n = j.write ? ::pwrite(fd_, p, j.bytes - at, static_cast<off_t>(j.offset + at))
                                  : ::pread(fd_, p, j.bytes - at, static_cast<off_t>(j.offset + at));
        if (n > 0) at += static_cast<std::size_t>(n);
        else if (n < 0 && errno == EINTR) continue;
        else problem = std::string("the optimizer's swap file: ") + (j.write ? "write" : "read") + " failed: " +
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
  int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::uint64_t submitted_ = 0, done_ = 0;
  bool stop_ = false;
  std::string error_;
  std::thread thread_;  // last: started once the rest exists
};

class NvmeOptimStore final : public OptimStore {
 public:
  NvmeOptimStore(const Plan& plan, const ShardLayout& optim, const std::vector<ShardSegment>& segments, int rank)
      : optim_(optim), units_(optim.shard.size()) {
    std::size_t at = 0, largest = 0;
    for (std::size_t u = 0; u < units_.size(); ++u) {
      units_[u].file_offset = at;
      units_[u].block = round_up(3 * optim.shard[u] * sizeof(float), kPageAlign);
      at += units_[u].block;
      largest = std::max(largest, units_[u].block);
    }
    file_bytes_ = at;
    for (const ShardSegment& s : segments) {  // each tensor's run lies inside one unit
      std::size_t u = 0;
      while (u + 1 < units_.size() && optim.offset[u + 1] <= s.offset) ++u;
      units_[u].segments.push_back({s.offset - optim.offset[u], s.length, s.decay});
    }
    buffers_.resize(static_cast<std::size_t>(plan.nvme_buffers));
    written_.assign(buffers_.size(), 0);
    for (PageBuffer<float>& b : buffers_) b.resize(largest / sizeof(float));
    open_file(plan.nvme_path, rank);
    io_ = std::make_unique<IoThread>(fd_);
  }
  ~NvmeOptimStore() override {
    io_.reset();
    if (fd_ >= 0) ::close(fd_);
  }

  void assign(const float* master, const float* m, const float* v) override {
    std::uint64_t last = 0;
    for (std::size_t u = 0; u < units_.size(); ++u) {
      PageBuffer<float>& b = buffers_[u % buffers_.size()];
      if (u >= buffers_.size()) io_->wait(written_[u % buffers_.size()]);  // the buffer's previous write is done
      const std::size_t n = optim_.shard[u], o = optim_.offset[u];
      std::copy(master + o, master + o + n, b.data());
      std::copy(m + o, m + o + n, b.data() + n);
      std::copy(v + o, v + o + n, b.data() + 2 * n);
      written_[u % buffers_.size()] = last = io_->submit(true, b.data(), units_[u].block, units_[u].file_offset);
    }
    io_->wait(last);
  }
  void read(float* master, float* m, float* v) override {
    for (std::size_t u = 0; u < units_.size(); ++u) {
      PageBuffer<float>& b = buffers_[0];
      io_->wait(io_->submit(false, b.data(), units_[u].block, units_[u].file_offset));
      const std::size_t n = optim_.shard[u], o = optim_.offset[u];
      std::copy(b.data(), b.data() + n, master + o);
      std::copy(b.data() + n, b.data() + 2 * n, m + o);
      std::copy(b.data() + 2 * n, b.data() + 3 * n, v + o);
    }
  }
  void update(const float* grads, const AdamWConfig& c, std::int64_t t, float lr, const UnitUpdated& updated) override {
    const std::size_t nb = buffers_.size(), nu = units_.size();
    std::vector<std::uint64_t> ready(nu, 0);
    const auto read_ahead = [&](std::size_t u) {  // into buffer u % nb, after that buffer's last write (one queue: in order)
      if (u < nu) ready[u] = io_->submit(false, buffers_[u % nb].data(), units_[u].block, units_[u].file_offset);
    };
    for (std::size_t u = 0; u + 1 < nb; ++u) read_ahead(u);
    std::uint64_t last = 0;
    for (std::size_t u = 0; u < nu; ++u) {
      io_->wait(ready[u]);
      float* b = buffers_[u % nb].data();
      const std::size_t n = optim_.shard[u];
      const float* g = grads + optim_.offset[u];
      for (const Segment& s : units_[u].segments)
        adamw_update(b + s.offset, g + s.offset, b + n + s.offset, b + 2 * n + s.offset, s.length, c, t, lr, s.decay);
      updated(static_cast<int>(u), b);
      last = io_->submit(true, b, units_[u].block, units_[u].file_offset);
      read_ahead(u + nb - 1);  // into the buffer unit u - 1 used, queued behind its write
    }
    io_->wait(last);
  }
  OptimFootprint footprint() const override {
    std::uint64_t host = 0;
    for (const PageBuffer<float>& b : buffers_) host += b.size() * sizeof(float);
    return {0, host, file_bytes_};
  }

 private:
  struct Segment {
    std::size_t offset, length;  // within the unit
    bool decay;
  };
  struct Unit {
    std::size_t file_offset = 0, block = 0;
    std::vector<Segment> segments;
  };

  void open_file(const std::string& dir, int rank) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    char name[96];
    std::snprintf(name, sizeof name, "tierzero-optim-%d-rank-%05d.swap", static_cast<int>(::getpid()), rank);
    const std::string path = (std::filesystem::path(dir) / name).string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
    if (fd_ < 0 && errno == EINVAL) fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);  // no O_DIRECT here (tmpfs)
    TZ_CHECK(fd_ >= 0, ConfigError, "offload_optimizer nvme: cannot create '" + path + "': " + std::strerror(errno));
    ::unlink(path.c_str());  // scratch: gone with the process, however it ends
    const int e = ::posix_fallocate(fd_, 0, static_cast<off_t>(file_bytes_));
    TZ_CHECK(e == 0 || e == EOPNOTSUPP || e == EINVAL, ConfigError,
             "offload_optimizer nvme: '" + dir + "' cannot hold the optimizer's " + std::to_string(file_bytes_) +
                 " bytes for rank " + std::to_string(rank) + ": " + std::strerror(e));
  }

  const ShardLayout& optim_;
  std::vector<Unit> units_;
  std::size_t file_bytes_ = 0;
  std::vector<PageBuffer<float>> buffers_;
  std::vector<std::uint64_t> written_;  // per buffer: its last write job (assign)
  int fd_ = -1;
  std::unique_ptr<IoThread> io_;
};

}  // namespace

std::unique_ptr<OptimStore> make_nvme_store(const Plan& plan, const ShardLayout& optim, const std::vector<ShardSegment>& segments, int rank) {
  return std::make_unique<NvmeOptimStore>(plan, optim, segments, rank);
}

}  // namespace tierzero
