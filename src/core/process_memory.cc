#include "tierzero/process_memory.h"

#include <fstream>
#include <string>

namespace tierzero {

std::uint64_t peak_resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      std::uint64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace tierzero
