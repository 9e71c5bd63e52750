// Element types that tierzero stores and moves, and the scalar conversions
// between them. bf16 and fp16 are stored as their 16-bit patterns; conversion
// to fp32 is exact, conversion from fp32 rounds to nearest, ties to even, and
// keeps NaN a NaN. bf16 is never reinterpreted as fp16 or the reverse.
#pragma once
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

// Functions marked TZ_HD are also compiled for CUDA and HIP devices
// (src/gpu), so the device kernels use exactly these conversions.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define TZ_HD __host__ __device__
#else
#define TZ_HD
#endif

namespace tierzero {

// The bits of `from` as a `To` of the same size (std::bit_cast, also in device code).
template <class To, class From>
TZ_HD inline To bits_as(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bits_as needs types of one size");
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

enum class DType : std::uint8_t { f32, bf16, f16, i8, u8 };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
// Parses "fp32"/"f32", "bf16", "fp16"/"f16", "int8"/"i8", "uint8"/"u8"; throws ConfigError.
DType parse_dtype(std::string_view name);
// True for the floating-point types (f32, bf16, f16).
bool is_float(DType t);

struct BF16 { std::uint16_t bits; };
struct F16 { std::uint16_t bits; };

TZ_HD inline float bf16_to_f32(std::uint16_t b) {
  return bits_as<float>(static_cast<std::uint32_t>(b) << 16);
}

TZ_HD inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t u = bits_as<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

// IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
TZ_HD inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
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
  return bits_as<float>(bits);
}

// Round to nearest even; overflow to Inf; NaN stays a quiet NaN (sign | 0x7e00).
TZ_HD inline std::uint16_t f32_to_f16(float f) {
  const std::uint32_t u = bits_as<std::uint32_t>(f);
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

// What matrix products compute in (`--matmul`, TOML `matmul`): fp32
// throughout, or bf16 inputs with fp32 accumulation on the device's bf16
// matrix units (GPU tensor cores; CPU AMX or AVX512-BF16). `automatic`:
// bf16 when the parameters are stored in bf16 and the device's bf16 units
// are faster than its fp32 arithmetic, fp32 otherwise (resolve_matmul).
enum class MatmulType : std::uint8_t { automatic, fp32, bf16 };
// A device's bf16 matrix units against its fp32 arithmetic: none, there
// but slower (AVX512-BF16 on an Intel Xeon without AMX), or faster
// (tensor cores, AMX).
enum class Bf16Units : std::uint8_t { none, slower, faster };
std::string_view matmul_type_name(MatmulType t);
// Parses "auto", "fp32", "bf16"; throws ConfigError.
MatmulType parse_matmul_type(std::string_view name);
// `requested` with automatic decided for parameters stored as `param_dtype`
// on a device with such bf16 units; a bf16 request on a device without
// them computes in fp32, one on slower units in bf16 as asked.
MatmulType resolve_matmul(MatmulType requested, DType param_dtype, Bf16Units units);

// Converts n elements of type `from` to fp32 / from fp32 to `to` (float types only).
void to_f32(DType from, const void* src, float* dst, std::size_t n);
void from_f32(DType to, const float* src, void* dst, std::size_t n);

// Divides n float elements in place by `divisor`, rounding once per element
// (how an avg reduction turns a sum into a mean). Throws for non-float types.
void divide_elements(void* buf, std::size_t n, DType t, int divisor);

}  // namespace tierzero
