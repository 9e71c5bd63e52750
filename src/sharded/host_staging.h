// The copies between an offloaded state in host memory (optim_store.h,
// param_store.h: offload cpu or nvme) and the backend's memory, where the
// two differ (a device): `slots` staging buffers of `bytes` each in the
// backend's memory, and, for a store that reads backend data on the host
// (`to_host`), one host buffer of `bytes`. On the host
// backend nothing is allocated or copied: every call hands back the
// pointer it was given, so the CPU backend's offload runs on the state
// itself. Copies are the Memory's upload and download (core/memory.h):
// ordered with the calling thread's other work on that memory, an upload
// done with its host source and a download finished when they return. A
// slot may be refilled once the work that read it is ordered before the
// refill (the same thread's stream) or has finished (a collective waited
// for). One thread.
#pragma once
#include <cstddef>
#include <vector>

#include "core/memory.h"

namespace tierzero {

class HostStaging {
 public:
  HostStaging(Memory& mem, std::size_t slots, std::size_t bytes, bool reads_on_host = false);
  // Whether copies are made (the backend's memory is not the host's).
  bool active() const { return active_; }
  // `bytes` of host memory readable in the backend's memory: uploaded into `slot`.
  const void* to_backend(std::size_t slot, const void* host, std::size_t bytes);
  // `bytes` of the backend's memory readable on the host: downloaded into the host buffer (reads_on_host).
  const void* to_host(const void* backend, std::size_t bytes);
  // Where the backend writes what is bound for `host`: `slot`; then from_backend copies it there.
  void* backend_buffer(std::size_t slot, void* host);
  void from_backend(std::size_t slot, void* host, std::size_t bytes);
  std::size_t backend_bytes() const { return active_ ? slots_.size() * bytes_ : 0; }
  std::size_t host_bytes() const { return down_.size(); }

 private:
  Memory& mem_;
  bool active_;
  std::size_t bytes_;
  std::vector<MemArray<std::byte>> slots_;
  std::vector<std::byte> down_;
};

}  // namespace tierzero
