// Blockwise quantisation (docs/algorithms.md; the packed layout in docs/formats.md).
//
// A tensor of n elements is cut into blocks of `block` elements (the last
// may be short). Each block gets its own fp32 parameters:
//   symmetric  (int8: qmax = 127, int4: qmax = 7)
//     scale = absmax / qmax, q = clamp(rne(x * (qmax / absmax)), -qmax, qmax), x' = q * scale
//   asymmetric (int8: qmax = 255, int4: qmax = 15)
//     scale = (max - min) / qmax, q = clamp(rne((x - min) * (qmax / (max - min))), 0, qmax),
//     x' = q * scale + min
// All arithmetic is fp32 with round-to-nearest-even (rne), no fused
// multiply-add; outputs in bf16/fp16 are rounded to nearest even.
// Blocks whose absmax (or max - min) is below 2^-120 get scale 0 and decode
// to 0 (to min when asymmetric). A block containing NaN or Inf, or whose
// asymmetric range overflows fp32, is a *bad block*: its data is 0, its
// scale NaN, it decodes to NaN, and quantize() counts it so a caller can
// skip the step.
//
// The scalar reference defines these semantics; the AVX2 and AVX-512
// implementations, chosen at run time from CPUID, produce identical bytes.
// All functions are pure and thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tierzero/dtype.h"

namespace tierzero {

struct QuantSpec {
  int bits = 8;             // 8 or 4
  bool asymmetric = false;  // min/max instead of absmax
  std::size_t block = 256;  // elements per block, >= 1
};

// Parameters of one block as stored in the packed layout.
struct SymBlock {
  float scale;
};
struct AsymBlock {
  float scale;
  float min;
};
static_assert(sizeof(SymBlock) == 4, "packed layout: one fp32 per symmetric block");
static_assert(sizeof(AsymBlock) == 8, "packed layout: two fp32 per asymmetric block");

enum class QuantImpl { reference, avx2, avx512, avx512bf16, best };

TZ_HD inline std::size_t quant_blocks(std::size_t n, const QuantSpec& s) { return (n + s.block - 1) / s.block; }
// Bytes of quantised values, padded to a multiple of 8.
TZ_HD inline std::size_t quant_data_bytes(std::size_t n, const QuantSpec& s) {
  const std::size_t raw = s.bits == 8 ? n : (n + 1) / 2;
  return (raw + 7) / 8 * 8;
}
// Bytes of the whole packed tensor: values, then one SymBlock/AsymBlock per block.
TZ_HD inline std::size_t quant_packed_bytes(std::size_t n, const QuantSpec& s) {
  return quant_data_bytes(n, s) + quant_blocks(n, s) * (s.asymmetric ? sizeof(AsymBlock) : sizeof(SymBlock));
}
// Throws ConfigError unless bits is 4 or 8 and block >= 1.
void validate(const QuantSpec& s);

bool quant_impl_available(QuantImpl impl);
std::string_view quant_impl_name(QuantImpl impl);
// The implementation QuantImpl::best resolves to on this CPU.
QuantImpl quant_best_impl();

// Quantises n elements of float type t into packed (quant_packed_bytes).
// Returns the number of bad blocks.
std::size_t quantize(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed,
                     QuantImpl impl = QuantImpl::best);
// Decodes a packed tensor of n elements into dst of float type t.
void dequantize(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t,
                QuantImpl impl = QuantImpl::best);
// Decodes and adds into an fp32 accumulator: acc[i] += x'[i].
void dequantize_add(const void* packed, std::size_t n, const QuantSpec& s, float* acc,
                    QuantImpl impl = QuantImpl::best);

}  // namespace tierzero
