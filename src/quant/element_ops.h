// The element-wise work the hierarchical collectives and the sharding
// engine do on buffers of a Memory (core/memory.h): dtype conversions,
// additions, averages and blockwise quantisation. Each call is ordered like
// that memory's work (per calling thread; on a device, enqueued on the
// thread's stream) and gives the CPU's bits: host_element_ops() runs
// dtype.h's and quant.h's functions at once; gpu::device_element_ops()
// runs kernels built on the same functions.
#pragma once
#include <cstddef>

#include "tierzero/dtype.h"
#include "quant/quant.h"

namespace tierzero {

class ElementOps {
 public:
  virtual ~ElementOps() = default;
  // dtype.h's conversions: same rounding as the CPU's.
  virtual void to_f32(DType from, const void* src, float* dst, std::size_t n) = 0;
  virtual void from_f32(DType to, const float* src, void* dst, std::size_t n) = 0;
  // acc[i] += src[i] (src of float type t).
  virtual void add_to_f32(DType t, const void* src, float* acc, std::size_t n) = 0;
  virtual void divide(void* buf, std::size_t n, DType t, int divisor) = 0;
  // quant.h's packed format, bit-identical across backends.
  virtual void quantize(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed) = 0;
  virtual void dequantize(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t) = 0;
  virtual void dequantize_add(const void* packed, std::size_t n, const QuantSpec& s, float* acc) = 0;
};

// The CPU's: every call runs to completion before returning.
ElementOps& host_element_ops();

}  // namespace tierzero
