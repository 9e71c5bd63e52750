#include "tierzero/dtype.h"

#include <cstring>

#include "tierzero/error.h"

namespace tierzero {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::bf16:
    case DType::f16: return 2;
    case DType::i8:
    case DType::u8: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::f16: return "fp16";
    case DType::i8: return "int8";
    case DType::u8: return "uint8";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "f32" || s == "float32") return DType::f32;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp16" || s == "f16" || s == "float16") return DType::f16;
  if (s == "int8" || s == "i8") return DType::i8;
  if (s == "uint8" || s == "u8") return DType::u8;
  TZ_THROW(ConfigError, "unknown dtype '" + std::string(s) + "' (expected fp32, bf16, fp16, int8 or uint8)");
}

bool is_float(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16; }

// IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t man = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do { ++e; man <<= 1; } while ((man & 0x400u) == 0);
      bits = sign | static_cast<std::uint32_t>(127 - 15 - e) << 23 | (man & 0x3ffu) << 13;
    }
  } else {
    bits = sign | (exp + 112) << 23 | man << 13;
  }
  return std::bit_cast<float>(bits);
}

std::uint16_t f32_to_f16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;            // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;           // rounds to >= 65520: Inf
  if (abs < 0x38800000u) {                                 // below 2^-14: subnormal or zero
    if (abs < 0x33000000u) return sign;                    // below 2^-25: rounds to zero
    // value = man * 2^(e-23); the fp16 subnormal count is value * 2^24 = man >> s, s = -(e+1).
    const std::uint32_t man = (abs & 0x7fffffu) | 0x800000u;
    const int s = 126 - static_cast<int>(abs >> 23);  // 14..24
    const std::uint32_t q = man >> s;
    const std::uint32_t rem = man & ((1u << s) - 1u);
    const std::uint32_t half = 1u << (s - 1);
    const std::uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
  r += 0xfffu + ((r >> 13) & 1u);      // round to nearest even
  return static_cast<std::uint16_t>(sign | (r >> 13));
}

void to_f32(DType from, const void* src, float* dst, std::size_t n) {
  const auto* h = static_cast<const std::uint16_t*>(src);
  switch (from) {
    case DType::f32: std::memcpy(dst, src, n * 4); return;
    case DType::bf16: for (std::size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]); return;
    case DType::f16: for (std::size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]); return;
    default: TZ_THROW(ConfigError, "to_f32: " + std::string(dtype_name(from)) + " is not a float type");
  }
}

void from_f32(DType to, const float* src, void* dst, std::size_t n) {
  auto* h = static_cast<std::uint16_t*>(dst);
  switch (to) {
    case DType::f32: std::memcpy(dst, src, n * 4); return;
    case DType::bf16: for (std::size_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]); return;
    case DType::f16: for (std::size_t i = 0; i < n; ++i) h[i] = f32_to_f16(src[i]); return;
    default: TZ_THROW(ConfigError, "from_f32: " + std::string(dtype_name(to)) + " is not a float type");
  }
}

void divide_elements(void* buf, std::size_t n, DType t, int divisor) {
  TZ_CHECK(is_float(t), ConfigError, "cannot average " + std::string(dtype_name(t)) + " elements");
  const float d = static_cast<float>(divisor);
  if (t == DType::f32) {
    auto* f = static_cast<float*>(buf);
    for (std::size_t i = 0; i < n; ++i) f[i] /= d;
    return;
  }
  auto* h = static_cast<std::uint16_t*>(buf);
  for (std::size_t i = 0; i < n; ++i)
    h[i] = t == DType::bf16 ? f32_to_bf16(bf16_to_f32(h[i]) / d) : f32_to_f16(f16_to_f32(h[i]) / d);
}

}  // namespace tierzero
