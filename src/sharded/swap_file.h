// A rank's scratch file for an offloaded state (Plan's OffloadPlacement
// nvme, ZeRO-Infinity's NVMe offload): created in the placement's
// directory and unlinked as soon as it is open, so a killed run leaves
// nothing behind (checkpoints, not this file, are the run's state);
// preallocated; read and written in whole page-aligned blocks with
// O_DIRECT where the filesystem allows it (no copy into the page cache),
// else through the page cache (tmpfs). One I/O thread runs the reads and
// writes in the order they are submitted, so a read queued after a write
// of the same block, or of the same buffer, sees it done.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tierzero {

// Where each unit's block lies in a swap file: `element_bytes` per element
// of the unit's shard (ShardLayout::shard), each block padded to a page.
struct SwapBlocks {
  std::vector<std::size_t> offset, bytes;  // per unit
  std::size_t total = 0, largest = 0;
  static SwapBlocks of(const std::vector<std::size_t>& shard, std::size_t element_bytes);
};

class SwapFile {
 public:
  // `state` names the file and the errors ("optim", "params"); `option`
  // the setting that asked for it (for messages). Throws ConfigError when
  // the directory cannot hold `bytes`, naming it.
  SwapFile(const std::string& dir, const std::string& state, const std::string& option, int rank, std::size_t bytes);
  ~SwapFile();
  SwapFile(const SwapFile&) = delete;
  SwapFile& operator=(const SwapFile&) = delete;
  // Queues a read or write of `bytes` at `offset`; returns the job's number.
  std::uint64_t submit(bool write, void* buf, std::size_t bytes, std::size_t offset);
  // Blocks until that job and those before it are done; throws Error if any
  // failed. A wait that blocks is the training thread's "offload_io"
  // activity (tierzero/flight_recorder.h) on `unit` (-1: none).
  void wait(std::uint64_t job, int unit = -1);

 private:
  struct Job {
    bool write;
    void* buf;
    std::size_t bytes, offset;
  };
  void run();
  std::string state_;
  int fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::uint64_t submitted_ = 0, done_ = 0;
  bool stop_ = false;
  std::string error_;
  std::thread thread_;  // last: started once the rest exists
};

}  // namespace tierzero
