// A caching allocator for buffers whose sizes repeat from step to step
// (device memory on a GPU, where cudaMalloc synchronises the device; pinned
// or plain host memory elsewhere). Requests are rounded up to a size class
// (powers of two from 256 bytes); a released block goes back to its class's
// free list and is handed out again, so the backing allocator runs only
// when a class has no free block: a training step that asks for the same
// sizes every time allocates in its first step and never again. Nothing is
// returned to the backing allocator before the pool is destroyed (or
// trim() is called). Not thread-safe: one pool per device per thread.
#pragma once
#include <cstddef>
#include <functional>
#include <unordered_map>
#include <vector>

namespace tierzero {

class BlockPool {
 public:
  using Allocate = std::function<void*(std::size_t)>;  // throws on failure
  using Free = std::function<void(void*)>;

  BlockPool(Allocate allocate, Free free);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // At least `bytes` bytes (0 gives a 256-byte block), aligned as the backing allocator aligns.
  void* allocate(std::size_t bytes);
  // Returns a block from allocate(); throws Error for any other pointer.
  void release(void* block);
  // Gives every free block back to the backing allocator.
  void trim();

  std::size_t backing_allocations() const { return backing_allocations_; }  // calls of the backing allocator so far
  std::size_t bytes_reserved() const { return reserved_; }                   // held from the backing allocator
  std::size_t bytes_in_use() const { return in_use_; }                       // handed out and not released

  static std::size_t size_class(std::size_t bytes);

 private:
  Allocate allocate_;
  Free free_;
  std::unordered_map<void*, std::size_t> live_;            // block -> class size
  std::unordered_map<std::size_t, std::vector<void*>> free_lists_;
  std::size_t backing_allocations_ = 0, reserved_ = 0, in_use_ = 0;
};

// A pool over std::malloc/std::free (host scratch; what the GPU pools are tested against).
BlockPool& host_pool();

// An array of T from a pool, returned to it on destruction. Move-only.
template <class T>
class PooledArray {
 public:
  PooledArray() = default;
  PooledArray(BlockPool& pool, std::size_t n) : pool_(&pool), n_(n), p_(static_cast<T*>(pool.allocate(n * sizeof(T)))) {}
  ~PooledArray() { reset(); }
  PooledArray(PooledArray&& o) noexcept : pool_(o.pool_), n_(o.n_), p_(o.p_) { o.p_ = nullptr, o.n_ = 0; }
  PooledArray& operator=(PooledArray&& o) noexcept {
    if (this != &o) reset(), pool_ = o.pool_, n_ = o.n_, p_ = o.p_, o.p_ = nullptr, o.n_ = 0;
    return *this;
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  std::size_t size() const { return n_; }
  void reset() {
    if (p_) pool_->release(p_);
    p_ = nullptr, n_ = 0;
  }

 private:
  BlockPool* pool_ = nullptr;
  std::size_t n_ = 0;
  T* p_ = nullptr;
};

}  // namespace tierzero
