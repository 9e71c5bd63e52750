// host_memory(): plain, 64-byte aligned host memory; every call runs to
// completion before returning.
#include <cstring>
#include <new>

#include "core/memory.h"

namespace tierzero {

namespace {
constexpr std::align_val_t kAlign{64};

class HostMemory final : public Memory {
 public:
  void* allocate(std::size_t bytes) override { return ::operator new(bytes, kAlign); }
  void release(void* p) noexcept override { ::operator delete(p, kAlign); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (dst != src && bytes) std::memmove(dst, src, bytes);
  }
  void upload(void* dst, const void* host_src, std::size_t bytes) override { copy(dst, host_src, bytes); }
  void download(void* host_dst, const void* src, std::size_t bytes) override { copy(host_dst, src, bytes); }
  void zero(void* dst, std::size_t bytes) override {
    if (bytes) std::memset(dst, 0, bytes);
  }
  void fence() override {}
  MemMark mark() override { return {}; }
  void wait_for(const MemMark&) override {}
};
}  // namespace

Memory& host_memory() {
  static HostMemory memory;
  return memory;
}

}  // namespace tierzero
