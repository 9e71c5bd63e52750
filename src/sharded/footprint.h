// Bytes of one rank's state by where they are: the backend's memory, host
// memory (an offloaded state, or the host buffers of one in files), files.
#pragma once
#include <cstdint>

namespace tierzero {

struct StateFootprint {
  std::uint64_t device = 0, host = 0, file = 0;
};

}  // namespace tierzero
