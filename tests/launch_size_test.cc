// The kernels' launch arithmetic (src/gpu/launch_size.h) on the CPU, for n
// up to 2^33: every grid is within CUDA's limits, and the grid-stride loops
// the kernels run visit every item exactly once.
#include <gtest/gtest.h>

#include <algorithm>

#include "gpu/launch_size.h"

namespace tierzero::gpu {
namespace {

// Items visited by the grid-stride loops of a launch of grid x block
// threads over n items, counted per thread in closed form (thread t visits
// t, t + stride, ... below n), and the largest index visited.
struct Coverage {
  std::size_t visits = 0, last = 0;
};
Coverage cover(unsigned grid, unsigned block, std::size_t n) {
  Coverage c;
  const std::size_t stride = grid_stride_step(grid, block);
  for (unsigned b = 0; b < grid; ++b)
    for (unsigned t = 0; t < block; ++t) {
      const std::size_t first = grid_stride_first(b, block, t);
      if (first >= n) continue;
      const std::size_t count = (n - 1 - first) / stride + 1;
      c.visits += count;
      c.last = std::max(c.last, first + (count - 1) * stride);
    }
  return c;
}

TEST(LaunchSize, GridsStayWithinTheCapAndNeverEmpty) {
  EXPECT_EQ(grid_for(0), 1u);
  EXPECT_EQ(grid_for(1), 1u);
  EXPECT_EQ(grid_for(kThreads), 1u);
  EXPECT_EQ(grid_for(kThreads + 1), 2u);
  EXPECT_EQ(grid_for(std::size_t{1} << 33), kMaxBlocks);
  EXPECT_EQ(grid_for(70000, 1), kMaxBlocks);  // rows: one block each, capped
  EXPECT_EQ(grid_for(1000, 1), 1000u);
}

TEST(LaunchSize, ElementLoopsVisitEveryItemOnceUpTo2To33) {
  const std::size_t gpt2_wte = 50257ull * 768;  // 38.6M: more than one pass of a capped grid
  EXPECT_LT(std::size_t{kMaxBlocks} * kThreads, gpt2_wte);
  for (std::size_t n : {std::size_t{1}, std::size_t{255}, std::size_t{257}, std::size_t{16776960}, std::size_t{16776961}, gpt2_wte,
                        (std::size_t{1} << 31) + 3, (std::size_t{1} << 32) - 1, std::size_t{1} << 33}) {
    const Coverage c = cover(grid_for(n), kThreads, n);
    EXPECT_EQ(c.visits, n) << n;
    EXPECT_EQ(c.last, n - 1) << n;
  }
}

TEST(LaunchSize, RowLoopsVisitEveryRowOnce) {
  for (std::size_t rows : {std::size_t{1}, std::size_t{8192}, std::size_t{65535}, std::size_t{65536}, std::size_t{12} * 1024 * 8}) {
    const Coverage c = cover(grid_for(rows, 1), 1, rows);  // the block's threads share a row: one "thread" per block
    EXPECT_EQ(c.visits, rows) << rows;
  }
}

}  // namespace
}  // namespace tierzero::gpu
