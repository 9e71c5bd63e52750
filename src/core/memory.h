// Where a rank's training state and collective buffers live: allocation,
// copies between host and this memory, and the ordering of the work done
// on it. host_memory() (the default) is plain memory; gpu::device_memory()
// (CUDA builds, tierzero/gpu_backend.h) is device memory with work enqueued
// on the calling thread's GpuContext stream. The element-wise work on such
// buffers is quant/element_ops.h's; the optimizer's is the engine
// backend's (backend/backend_impl.h); both follow this memory's ordering.
//
// Ordering contract: work is ordered per calling thread, and may still be
// pending when a call returns (on a device it is). fence() waits until
// everything the calling thread enqueued is done. Before a Communicator
// reads memory this thread wrote, the writer calls fence(). Another thread
// may instead order its own later work after a point of this thread's:
// mark() here, wait_for(mark) there (on a device: an event and a stream
// wait; neither blocks the host). A CommSchedule job marks the queuing
// thread, and the schedule's executor waits for that mark, fences before
// every collective it issues and fences at the end of each job.
// upload() has read its host source when it returns; download() returns
// finished results.
//
// Allocation: allocate() and release() may be called from any thread; they
// go to the backing allocator (on a GPU, the device's one stream-ordered
// pool, gpu::device_allocate), so owners allocate once and reuse: the engine at
// construction, the hierarchies' scratch on first use. Released memory
// must no longer be in use by any stream (fence first).
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

namespace tierzero {

// A point in one thread's work on a Memory (backend-defined handle).
struct MemMark {
  void* handle = nullptr;
  std::uint64_t seq = 0;
};

class Memory {
 public:
  virtual ~Memory() = default;
  virtual void* allocate(std::size_t bytes) = 0;  // throws std::bad_alloc
  virtual void release(void* p) noexcept = 0;

  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // Reads host_src before returning; the write into dst is ordered like the rest.
  virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void zero(void* dst, std::size_t bytes) = 0;
  virtual void fence() = 0;
  // The calling thread's work so far. A device reuses a ring of 64 events
  // per thread: waiting for a mark 64 or more marks old waits for a later
  // point of the same thread (longer, never too short).
  virtual MemMark mark() = 0;
  // The calling thread's later work runs after everything before `m`.
  virtual void wait_for(const MemMark& m) = 0;
};

// Plain host memory: every call runs to completion before returning.
Memory& host_memory();

// An array of T in a Memory (uninitialised; zero() it when that matters).
// Move-only; resize() drops the contents.
template <class T>
class MemArray {
 public:
  MemArray() = default;
  MemArray(Memory& mem, std::size_t n) { resize(mem, n); }
  ~MemArray() { reset(); }
  MemArray(MemArray&& o) noexcept : mem_(o.mem_), p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  MemArray& operator=(MemArray&& o) noexcept {
    if (this != &o) reset(), mem_ = o.mem_, p_ = std::exchange(o.p_, nullptr), n_ = std::exchange(o.n_, 0);
    return *this;
  }
  void resize(Memory& mem, std::size_t n) {
    reset();
    mem_ = &mem;
    if (n) p_ = static_cast<T*>(mem.allocate(n * sizeof(T))), n_ = n;
  }
  void reset() noexcept {
    if (p_) mem_->release(p_);
    p_ = nullptr, n_ = 0;
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  std::size_t size() const { return n_; }
  std::size_t bytes() const { return n_ * sizeof(T); }

 private:
  Memory* mem_ = nullptr;
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace tierzero
