// PageBuffer<T>: a std::vector whose storage starts on a page boundary
// (kPageAlign), so write_file_synced hands its bytes straight to the disk
// (O_DIRECT) instead of copying them into the page cache first: on this
// kind of machine the copy and the page-cache pages it allocates cost more
// CPU than the write itself. Used for the checkpoint snapshot buffers.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace tierzero {

inline constexpr std::size_t kPageAlign = 4096;  // a multiple of every logical block size Linux's O_DIRECT asks for

template <class T>
struct PageAllocator {
  using value_type = T;
  PageAllocator() = default;
  template <class U>
  PageAllocator(const PageAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kPageAlign})); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kPageAlign}); }
  template <class U>
  bool operator==(const PageAllocator<U>&) const noexcept { return true; }
};

template <class T>
using PageBuffer = std::vector<T, PageAllocator<T>>;

}  // namespace tierzero
