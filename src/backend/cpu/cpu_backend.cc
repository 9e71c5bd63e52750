// cpu_backend(): host memory and the CPU model.
#include "tierzero/backend.h"

namespace tierzero {

const Backend& cpu_backend() {
  static const Backend backend = backend_of<HostOps>("cpu", host_memory());
  return backend;
}

}  // namespace tierzero
