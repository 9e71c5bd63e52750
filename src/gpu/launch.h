// What every CUDA source of tierzero_gpu needs to launch work: the block
// size, the calling thread's stream (GpuContext) and error checks that
// throw Error naming the failed call.
#pragma once
#include <string>

#include "gpu/device_api.h"
#include "tierzero/error.h"
#include "tierzero/gpu_ops.h"

namespace tierzero::gpu {

constexpr int kThreads = 256;

inline void check(cudaError_t e, const char* what) {
  TZ_CHECK(e == cudaSuccess, Error, std::string(what) + ": " + cudaGetErrorString(e));
}
inline cudaStream_t stream() { return static_cast<cudaStream_t>(GpuContext::current().stream()); }
// After a kernel launch: throws if it could not be launched.
inline void launched(const char* what) { check(cudaGetLastError(), what); }

}  // namespace tierzero::gpu
