// GptModel on a CUDA device: the model's one implementation, instantiated
// with the device ops backend, and the CUDA Backend of the engine.
#include "model/gpt_impl.h"
#include "gpu/device_memory.h"
#include "gpu/gpu_model.h"
#include "tierzero/gpu_backend.h"

namespace tierzero {
template class GptModel<float, gpu::DeviceOps>;

namespace gpu {
const Backend& cuda_backend() {
  static const Backend backend = [] {
    Backend b = backend_of<DeviceOps>("cuda", device_memory(), device_element_ops(), device_step_ops());
    b.concurrent_queues = false;  // NCCL: one queue (backend_impl.h)
    return b;
  }();
  return backend;
}
}  // namespace gpu
}  // namespace tierzero
