// Blockwise quantisation on CUDA devices: one 32-lane group (a warp; half
// a 64-lane AMD wavefront) per quantisation block at a time; the block's
// statistics reduced by butterfly shuffles, so every lane holds them
// without shared memory or barriers; parameters and values from the shared
// host/device functions of quant_block.h.
#include <algorithm>
#include <string>

#include "gpu/launch.h"
#include "quant/quant_block.h"
#include "gpu/gpu_quant.h"

namespace tierzero {

namespace {
using gpu::grid_for;
using gpu::kThreads;
constexpr unsigned kLanes = 32;                   // lanes per group (TZ_SHFL_XOR's width)
constexpr unsigned kGroups = kThreads / kLanes;   // groups per thread block

__device__ std::size_t group_index() { return (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes; }
__device__ std::size_t group_count() { return static_cast<std::size_t>(gridDim.x) * blockDim.x / kLanes; }

// Grid-stride over quantisation blocks, one group each. The first group
// also zeroes the data region's padding (the bytes after the last value up
// to the 8-byte boundary), as the CPU reference does.
template <class In>
__global__ void quantize_kernel(const In* src, std::size_t n, std::size_t blocks, QuantSpec s, std::uint8_t* packed,
                                unsigned* bad_blocks) {
  const unsigned lane = threadIdx.x % kLanes;
  if (group_index() == 0) {
    const std::size_t raw = s.bits == 8 ? n : (n + 1) / 2;
    for (std::size_t i = raw + lane; i < quant_data_bytes(n, s); i += kLanes) packed[i] = 0;
  }
  for (std::size_t b = group_index(); b < blocks; b += group_count()) {  // the same trip count on every lane of a group
    const std::size_t begin = b * s.block, end = quant::end_of(n, begin, s.block);
    quant::Stats st;
    for (std::size_t i = begin + lane; i < end; i += kLanes) st.add(quant::load(src, i));
    int bad = st.bad;
    for (unsigned o = kLanes / 2; o > 0; o /= 2) {  // max, min and "or" are exact in any order
      st.absmax = quant::max_of(st.absmax, TZ_SHFL_XOR(st.absmax, o));
      st.min = quant::min_of(st.min, TZ_SHFL_XOR(st.min, o));
      st.max = quant::max_of(st.max, TZ_SHFL_XOR(st.max, o));
      bad |= TZ_SHFL_XOR(bad, o);
    }
    st.bad = bad != 0;
    const quant::Params p = quant::params(st, s);
    if (lane == 0) {
      quant::write_params(packed, n, b, p, s);
      if (p.bad && bad_blocks) atomicAdd(bad_blocks, 1u);
    }
    if (s.bits == 8) {
      for (std::size_t i = begin + lane; i < end; i += kLanes)
        packed[i] = static_cast<std::uint8_t>(quant::quantize_one(quant::load(src, i), p, s));
    } else {  // int4: whole bytes per lane (the block size is even, so no byte spans two blocks)
      for (std::size_t i = begin + 2 * lane; i < end; i += 2 * kLanes) {
        const int q0 = quant::quantize_one(quant::load(src, i), p, s);
        const int q1 = i + 1 < end ? quant::quantize_one(quant::load(src, i + 1), p, s) : 0;
        packed[i / 2] = static_cast<std::uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
      }
    }
  }
}

// dst[i] = x'[i], or acc[i] += x'[i] with Add (dequantize_add, fp32 only): one group per block.
template <class Out, bool Add = false>
__global__ void dequantize_kernel(const std::uint8_t* packed, std::size_t n, std::size_t blocks, QuantSpec s, Out* dst) {
  const unsigned lane = threadIdx.x % kLanes;
  for (std::size_t b = group_index(); b < blocks; b += group_count()) {
    const std::size_t begin = b * s.block, end = quant::end_of(n, begin, s.block);
    const quant::Params p = quant::read_params(packed, n, b, s);
    for (std::size_t i = begin + lane; i < end; i += kLanes) {
      const float x = quant::dequantize_one(quant::get(packed, i, s), p, s);
      if constexpr (Add) dst[i] += x;
      else quant::store(dst, i, x);
    }
  }
}

}  // namespace

bool gpu_available(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = e != cudaSuccess ? std::string("CUDA: ") + cudaGetErrorString(e) : "no CUDA device";
    return false;
  }
  return true;
}

namespace gpu {

void quantize(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed, unsigned* bad_blocks) {
  validate(s);
  TZ_CHECK(s.bits == 8 || s.block % 2 == 0, ConfigError, "int4 on the device needs an even block size");
  TZ_CHECK(is_float(t), ConfigError, "cannot quantise " + std::string(dtype_name(t)) + " elements");
  const std::size_t blocks = quant_blocks(n, s);
  if (blocks == 0) return;
  const unsigned grid = grid_for(blocks, kGroups);
  auto* out = static_cast<std::uint8_t*>(packed);
  if (t == DType::f32) quantize_kernel<<<grid, kThreads, 0, stream()>>>(static_cast<const float*>(src), n, blocks, s, out, bad_blocks);
  else if (t == DType::bf16) quantize_kernel<<<grid, kThreads, 0, stream()>>>(static_cast<const BF16*>(src), n, blocks, s, out, bad_blocks);
  else quantize_kernel<<<grid, kThreads, 0, stream()>>>(static_cast<const F16*>(src), n, blocks, s, out, bad_blocks);
  launched("quantize kernel");
}

void dequantize(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t) {
  validate(s);
  TZ_CHECK(is_float(t), ConfigError, "cannot dequantise into " + std::string(dtype_name(t)) + " elements");
  const std::size_t blocks = quant_blocks(n, s);
  if (blocks == 0) return;
  const unsigned grid = grid_for(blocks, kGroups);
  const auto* in = static_cast<const std::uint8_t*>(packed);
  if (t == DType::f32) dequantize_kernel<<<grid, kThreads, 0, stream()>>>(in, n, blocks, s, static_cast<float*>(dst));
  else if (t == DType::bf16) dequantize_kernel<<<grid, kThreads, 0, stream()>>>(in, n, blocks, s, static_cast<BF16*>(dst));
  else dequantize_kernel<<<grid, kThreads, 0, stream()>>>(in, n, blocks, s, static_cast<F16*>(dst));
  launched("dequantize kernel");
}

void dequantize_add(const void* packed, std::size_t n, const QuantSpec& s, float* acc) {
  validate(s);
  const std::size_t blocks = quant_blocks(n, s);
  if (blocks == 0) return;
  const unsigned grid = grid_for(blocks, kGroups);
  dequantize_kernel<float, true><<<grid, kThreads, 0, stream()>>>(static_cast<const std::uint8_t*>(packed), n, blocks, s, acc);
  launched("dequantize_add kernel");
}

}  // namespace gpu

std::size_t gpu_quantize(const void* host_src, DType t, std::size_t n, const QuantSpec& s, void* host_packed) {
  const std::size_t in_bytes = n * dtype_size(t), out_bytes = quant_packed_bytes(n, s);
  gpu::DeviceArray<std::byte> src(in_bytes), packed(out_bytes);
  gpu::DeviceArray<unsigned> bad(1);
  gpu::to_device(src.data(), host_src, in_bytes);
  // Every byte of the packed tensor is the kernel's: fill it with 0xff first, so that none is left unwritten.
  gpu::check(cudaMemsetAsync(packed.data(), 0xff, out_bytes, gpu::stream()), "cudaMemsetAsync");
  gpu::fill_zero(bad.data(), sizeof(unsigned));
  gpu::quantize(src.data(), t, n, s, packed.data(), bad.data());
  unsigned result = 0;
  gpu::to_host(host_packed, packed.data(), out_bytes);
  gpu::to_host(&result, bad.data(), sizeof result);
  return result;
}

void gpu_dequantize(const void* host_packed, std::size_t n, const QuantSpec& s, void* host_dst, DType t) {
  const std::size_t in_bytes = quant_packed_bytes(n, s), out_bytes = n * dtype_size(t);
  gpu::DeviceArray<std::byte> packed(in_bytes), dst(out_bytes);
  gpu::to_device(packed.data(), host_packed, in_bytes);
  gpu::dequantize(packed.data(), n, s, dst.data(), t);
  gpu::to_host(host_dst, dst.data(), out_bytes);
}

}  // namespace tierzero
