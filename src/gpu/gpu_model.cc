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
  static const Backend backend = backend_of<DeviceOps>("cuda", device_memory(), device_element_ops(), device_step_ops());
  return backend;
}
}  // namespace gpu
}  // namespace tierzero
