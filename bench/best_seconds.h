// The best of `reps` timings of `f`, after one warm-up call (so first-touch
// page faults and caches are not measured). Shared by the benchmarks.
#pragma once
#include <algorithm>
#include <chrono>
#include <functional>

namespace tierzero::bench {

inline double best_seconds(int reps, const std::function<void()>& f) {
  f();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace tierzero::bench
