// The sharding engine on a CUDA device (CUDA builds): device memory and the
// device model as a Backend (tierzero/backend.h), so that ShardedTrainer
// runs on the GPU with the NCCL communicator (tierzero/nccl.h) under the
// same plans as on the CPU.
#pragma once
#include "tierzero/backend.h"

namespace tierzero::gpu {

// Device memory (the device's stream-ordered pool) with the kernels and
// copies enqueued on the calling thread's GpuContext stream; fence()
// synchronises that stream. Conversions, quantisation and AdamW follow the
// CPU's rules element by element (sum_squares adds in another order:
// rounding differs).
Memory& device_memory();
// The element work and the optimizer step on it, by the same rules.
ElementOps& device_element_ops();
StepOps& device_step_ops();

// device_memory() and GptModel<float, gpu::DeviceOps>.
const Backend& cuda_backend();

}  // namespace tierzero::gpu
