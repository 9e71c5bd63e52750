// The sharding engine on a CUDA device (CUDA builds): device memory and the
// device model as a Backend (tierzero/backend.h), so that ShardedTrainer
// runs on the GPU with the NCCL communicator (tierzero/nccl.h) under the
// same plans as on the CPU. Conversions, quantisation and AdamW follow the
// CPU's rules element by element; the gradient norm adds in another order
// (its rounding differs).
#pragma once
#include "tierzero/backend.h"

namespace tierzero::gpu {

// The device of the calling thread's GpuContext, its stream-ordered memory
// pool and kernels. A process-wide object; never destroyed.
const Backend& cuda_backend();

}  // namespace tierzero::gpu
