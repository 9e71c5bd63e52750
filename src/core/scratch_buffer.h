// ScratchBuffer<T>: n zero-initialised elements of T in an anonymous
// mapping of their own (mmap), given back to the system when destroyed,
// whatever malloc's settings: the CLI keeps freed heap memory for reuse
// (keep_freed_memory in tools/tierzero/main.cc), so a large buffer used
// once from the heap would stay in the process after (a unit's slices
// while a model loads, then never again). Its pages count as resident
// only once written. Owns its mapping; move-only; one thread.
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <utility>

namespace tierzero {

template <class T>
class ScratchBuffer {
 public:
  explicit ScratchBuffer(std::size_t n) : n_(n) {
    if (n == 0) return;
    void* p = ::mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    p_ = static_cast<T*>(p);
  }
  ~ScratchBuffer() {
    if (p_) ::munmap(p_, n_ * sizeof(T));
  }
  ScratchBuffer(ScratchBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  ScratchBuffer& operator=(ScratchBuffer&&) = delete;
  ScratchBuffer(const ScratchBuffer&) = delete;
  T* data() { return p_; }
  const T* data() const { return p_; }
  std::size_t size() const { return n_; }
  T* begin() { return p_; }
  T* end() { return p_ + n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace tierzero
