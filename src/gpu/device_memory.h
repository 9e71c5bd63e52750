// The CUDA backend's parts (tierzero/gpu_backend.h puts them together):
// device memory (the device's stream-ordered pool) with the kernels and
// copies enqueued on the calling thread's GpuContext stream; fence()
// synchronises that stream. Conversions, quantisation and AdamW follow the
// CPU's rules element by element (sum_squares adds in another order, so
// its rounding differs from the CPU's, but in a fixed one: the same bits
// every run). Implemented in device_memory.cu.
#pragma once
#include "backend/backend_impl.h"

namespace tierzero::gpu {

Memory& device_memory();
// The element work and the optimizer step on it, by the same rules.
ElementOps& device_element_ops();
StepOps& device_step_ops();

}  // namespace tierzero::gpu
