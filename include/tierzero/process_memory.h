// This process's memory as the kernel counts it (Linux /proc/self/status).
// Thread-safe: each call reads the file afresh.
#pragma once
#include <cstdint>

namespace tierzero {

// The peak resident set so far in bytes (VmHWM); 0 where the kernel does not
// say (no /proc).
std::uint64_t peak_resident_bytes();

}  // namespace tierzero
