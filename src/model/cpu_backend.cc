// cpu_backend(): host memory and the CPU model.
#include "tierzero/backend.h"

namespace tierzero {

const Backend& cpu_backend() {
  static const Backend backend{"cpu", &host_memory(), [](const GptLayout& layout, int batch, int seq_len, bool recompute) {
                                 return std::unique_ptr<UnitModel>(std::make_unique<GptUnitModel<HostOps>>(layout, batch, seq_len, recompute));
                               }};
  return backend;
}

}  // namespace tierzero
