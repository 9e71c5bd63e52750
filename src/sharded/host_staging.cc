#include "sharded/host_staging.h"

namespace tierzero {

HostStaging::HostStaging(Memory& mem, std::size_t slots, std::size_t bytes, bool reads_on_host)
    : mem_(mem), active_(&mem != &host_memory()), bytes_(bytes) {
  if (!active_) return;
  slots_.resize(slots);
  for (MemArray<std::byte>& s : slots_) s.resize(mem, bytes);
  if (reads_on_host) down_.resize(bytes);
}

const void* HostStaging::to_backend(std::size_t slot, const void* host, std::size_t bytes) {
  if (!active_) return host;
  mem_.upload(slots_[slot].data(), host, bytes);
  return slots_[slot].data();
}

const void* HostStaging::to_host(const void* backend, std::size_t bytes) {
  if (!active_) return backend;
  mem_.download(down_.data(), backend, bytes);
  return down_.data();
}

void* HostStaging::backend_buffer(std::size_t slot, void* host) { return active_ ? slots_[slot].data() : host; }

void HostStaging::from_backend(std::size_t slot, void* host, std::size_t bytes) {
  if (active_) mem_.download(host, slots_[slot].data(), bytes);
}

}  // namespace tierzero
