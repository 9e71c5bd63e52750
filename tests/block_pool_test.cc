// The caching allocator behind the device pools, over a counting host allocator.
#include "tierzero/block_pool.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "tierzero/error.h"

namespace tierzero {
namespace {

struct Counting {
  int allocs = 0, frees = 0;
  BlockPool pool{[this](std::size_t n) { return ++allocs, std::malloc(n); }, [this](void* p) { ++frees, std::free(p); }};
};

TEST(BlockPool, SizeClassesArePowersOfTwoFrom256) {
  EXPECT_EQ(BlockPool::size_class(0), 256u);
  EXPECT_EQ(BlockPool::size_class(256), 256u);
  EXPECT_EQ(BlockPool::size_class(257), 512u);
  EXPECT_EQ(BlockPool::size_class(3000), 4096u);
  EXPECT_EQ(BlockPool::size_class((1u << 20) + 1), 1u << 21);
}

TEST(BlockPool, ARepeatedStepAllocatesOnlyTheFirstTime) {
  Counting c;
  const std::size_t sizes[] = {100, 5000, 5000, 70000, 1};
  for (int step = 0; step < 5; ++step) {
    std::vector<void*> live;
    for (std::size_t s : sizes) live.push_back(c.pool.allocate(s));
    EXPECT_EQ(std::set<void*>(live.begin(), live.end()).size(), live.size());  // distinct blocks while live
    for (void* p : live) c.pool.release(p);
    EXPECT_EQ(c.pool.bytes_in_use(), 0u);
  }
  EXPECT_EQ(c.allocs, 5);  // 256, 8192 twice, 131072, 256: the first step's five, never more
  EXPECT_EQ(c.pool.backing_allocations(), 5u);
  EXPECT_EQ(c.pool.bytes_reserved(), 256u + 8192 + 8192 + 131072 + 256);
  c.pool.trim();
  EXPECT_EQ(c.frees, 5);
  EXPECT_EQ(c.pool.bytes_reserved(), 0u);
}

TEST(BlockPool, ReleasingAForeignOrFreedBlockThrows) {
  Counting c;
  void* p = c.pool.allocate(10);
  int x;
  EXPECT_THROW(c.pool.release(&x), Error);
  c.pool.release(p);
  EXPECT_THROW(c.pool.release(p), Error);
}

TEST(BlockPool, PooledArraysGoBackOnDestruction) {
  Counting c;
  {
    PooledArray<double> a(c.pool, 100);
    a.data()[99] = 1.0;
    PooledArray<double> b = std::move(a);
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(b.size(), 100u);
    EXPECT_EQ(c.pool.bytes_in_use(), 1024u);
  }
  EXPECT_EQ(c.pool.bytes_in_use(), 0u);
}

}  // namespace
}  // namespace tierzero
