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

std::string_view matmul_type_name(MatmulType t) {
  switch (t) {
    case MatmulType::automatic: return "auto";
    case MatmulType::fp32: return "fp32";
    case MatmulType::bf16: return "bf16";
  }
  return "?";
}

MatmulType parse_matmul_type(std::string_view s) {
  if (s == "auto") return MatmulType::automatic;
  if (s == "fp32" || s == "f32") return MatmulType::fp32;
  if (s == "bf16") return MatmulType::bf16;
  TZ_THROW(ConfigError, "unknown matmul type '" + std::string(s) + "' (expected auto, fp32 or bf16)");
}

MatmulType resolve_matmul(MatmulType requested, DType param_dtype, Bf16Units units) {
  if (units == Bf16Units::none) return MatmulType::fp32;
  if (requested != MatmulType::automatic) return requested;
  return param_dtype == DType::bf16 && units == Bf16Units::faster ? MatmulType::bf16 : MatmulType::fp32;
}

bool is_float(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16; }

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
