#include "tierzero/block_pool.h"

#include <bit>
#include <cstdlib>
#include <new>

#include "tierzero/error.h"

namespace tierzero {

BlockPool::BlockPool(Allocate allocate, Free free) : allocate_(std::move(allocate)), free_(std::move(free)) {}

BlockPool::~BlockPool() {
  trim();
  for (auto& [block, size] : live_) free_(block);  // leaked by a caller: still the pool's to give back
}

std::size_t BlockPool::size_class(std::size_t bytes) { return std::bit_ceil(std::max<std::size_t>(bytes, 256)); }

void* BlockPool::allocate(std::size_t bytes) {
  const std::size_t size = size_class(bytes);
  auto& list = free_lists_[size];
  void* block;
  if (list.empty()) {
    block = allocate_(size);
    ++backing_allocations_;
    reserved_ += size;
  } else {
    block = list.back();
    list.pop_back();
  }
  live_.emplace(block, size);
  in_use_ += size;
  return block;
}

void BlockPool::release(void* block) {
  const auto it = live_.find(block);
  TZ_CHECK(it != live_.end(), Error, "BlockPool::release: not a block of this pool, or released twice");
  free_lists_[it->second].push_back(block);
  in_use_ -= it->second;
  live_.erase(it);
}

void BlockPool::trim() {
  for (auto& [size, list] : free_lists_) {
    for (void* block : list) free_(block), reserved_ -= size;
    list.clear();
  }
}

BlockPool& host_pool() {
  static BlockPool pool(
      [](std::size_t n) {
        void* p = std::malloc(n);
        if (!p) throw std::bad_alloc();
        return p;
      },
      [](void* p) { std::free(p); });
  return pool;
}

}  // namespace tierzero
