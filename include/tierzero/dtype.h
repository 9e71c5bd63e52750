// Element types that tierzero stores and moves, and the scalar conversions
// between them. bf16 and fp16 are stored as their 16-bit patterns; conversion
// to fp32 is exact, conversion from fp32 rounds to nearest, ties to even, and
// keeps NaN a NaN. bf16 is never reinterpreted as fp16 or the reverse.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tierzero {

enum class DType : std::uint8_t { f32, bf16, f16, i8, u8 };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
// Parses "fp32"/"f32", "bf16", "fp16"/"f16", "int8"/"i8", "uint8"/"u8"; throws ConfigError.
DType parse_dtype(std::string_view name);
// True for the floating-point types (f32, bf16, f16).
bool is_float(DType t);

struct BF16 { std::uint16_t bits; };
struct F16 { std::uint16_t bits; };

inline float bf16_to_f32(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);

// Converts n elements of type `from` to fp32 / from fp32 to `to` (float types only).
void to_f32(DType from, const void* src, float* dst, std::size_t n);
void from_f32(DType to, const float* src, void* dst, std::size_t n);

// Divides n float elements in place by `divisor`, rounding once per element
// (how an avg reduction turns a sum into a mean). Throws for non-float types.
void divide_elements(void* buf, std::size_t n, DType t, int divisor);

}  // namespace tierzero
