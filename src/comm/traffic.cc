#include "tierzero/traffic.h"

namespace tierzero {

std::array<std::uint64_t, kNumLevels> Traffic::snapshot() const {
  std::array<std::uint64_t, kNumLevels> s{};
  for (int i = 0; i < kNumLevels; ++i) s[i] = bytes_[i].load(std::memory_order_relaxed);
  return s;
}

std::uint64_t Traffic::total() const {
  std::uint64_t t = 0;
  for (auto& b : bytes_) t += b.load(std::memory_order_relaxed);
  return t;
}

void Traffic::reset() {
  for (auto& b : bytes_) b.store(0, std::memory_order_relaxed);
}

std::array<std::uint64_t, kNumLevels> traffic_delta(const std::array<std::uint64_t, kNumLevels>& before,
                                                    const std::array<std::uint64_t, kNumLevels>& after) {
  std::array<std::uint64_t, kNumLevels> d{};
  for (int i = 0; i < kNumLevels; ++i) d[i] = after[i] - before[i];
  return d;
}

}  // namespace tierzero
