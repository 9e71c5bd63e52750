// What every CUDA source of tierzero_gpu needs to launch work: the loops
// and sizes of launch_size.h, the calling thread's stream (GpuContext) and error checks that
// throw Error naming the failed call.
#pragma once
#include <string>

#include "gpu/device_api.h"
#include "gpu/launch_size.h"
#include "tierzero/error.h"
#include "gpu/gpu_ops.h"

// A kernel's loop over its n items (launch_size.h): launch grid_for(n) blocks of kThreads.
#define TZ_GRID_STRIDE(i, n)                                                                       \
  for (std::size_t i = ::tierzero::gpu::grid_stride_first(blockIdx.x, blockDim.x, threadIdx.x); i < (n); \
       i += ::tierzero::gpu::grid_stride_step(gridDim.x, blockDim.x))
// A kernel's loop over n rows, one block per row at a time: launch grid_for(n, 1) blocks.
#define TZ_BLOCK_STRIDE(r, n) for (std::size_t r = blockIdx.x; r < (n); r += gridDim.x)

namespace tierzero::gpu {

inline void check(cudaError_t e, const char* what) {
  TZ_CHECK(e == cudaSuccess, Error, std::string(what) + ": " + cudaGetErrorString(e));
}
inline cudaStream_t stream() { return static_cast<cudaStream_t>(GpuContext::current().stream()); }
// After a kernel launch: throws if it could not be launched.
inline void launched(const char* what) { check(cudaGetLastError(), what); }

}  // namespace tierzero::gpu
