// Device discovery and the blockwise quantisers on the device (CUDA or HIP
// builds).
// The kernels run the same per-element functions as the CPU reference
// (src/quant/quant_block.h, compiled for host and device), so their output
// is meant to be byte-identical; tests/gpu_quant_test.cc checks that
// wherever a GPU is present and skips with the reason elsewhere.
#pragma once
#include <cstddef>
#include <string>

#include "quant/quant.h"

namespace tierzero {

// True when a CUDA device can be used; otherwise `why` says what is missing.
bool gpu_available(std::string* why = nullptr);

// Host buffers in and out, device scratch from the current GpuContext's
// pool (entry points for tests; gpu_ops.h has the device-pointer ones).
// int4 needs an even block size on the device. Returns the bad blocks.
std::size_t gpu_quantize(const void* host_src, DType t, std::size_t n, const QuantSpec& s, void* host_packed);
void gpu_dequantize(const void* host_packed, std::size_t n, const QuantSpec& s, void* host_dst, DType t);

}  // namespace tierzero
