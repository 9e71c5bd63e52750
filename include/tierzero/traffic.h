// Per-level byte counters. A collective adds, for the calling rank, the bytes
// it receives from each peer, attributed to the outermost level that
// separates the two ranks (Topology::separating_level). Shared by a world
// communicator and every communicator split from it; safe to update from
// several threads.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>

#include "tierzero/topology.h"

namespace tierzero {

class Traffic {
 public:
  void add(Level level, std::uint64_t bytes) { bytes_[static_cast<int>(level)].fetch_add(bytes, std::memory_order_relaxed); }
  std::uint64_t bytes(Level level) const { return bytes_[static_cast<int>(level)].load(std::memory_order_relaxed); }
  std::array<std::uint64_t, kNumLevels> snapshot() const;
  std::uint64_t total() const;
  void reset();

 private:
  std::array<std::atomic<std::uint64_t>, kNumLevels> bytes_{};
};

// Difference of two snapshots (after - before), per level.
std::array<std::uint64_t, kNumLevels> traffic_delta(const std::array<std::uint64_t, kNumLevels>& before,
                                                    const std::array<std::uint64_t, kNumLevels>& after);

}  // namespace tierzero
