// GptModel on a CUDA device: the model's one implementation, instantiated
// with the device ops backend.
#include "model/gpt_impl.h"
#include "tierzero/gpu_model.h"

namespace tierzero {
template class GptModel<float, gpu::DeviceOps>;
}  // namespace tierzero
