// The per-element and per-block semantics of blockwise quantisation, shared
// by the scalar reference and the tails of the vectorised kernels so that
// all of them compute exactly the same thing (see quant/quant.h).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "tierzero/dtype.h"
#include "quant/quant.h"

namespace tierzero::quant {

// One implementation's entry points (reference, AVX2, AVX-512).
struct Kernels {
  std::size_t (*quantize)(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed);
  void (*dequantize)(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t);
  void (*dequantize_add)(const void* packed, std::size_t n, const QuantSpec& s, float* acc);
};

const Kernels& reference_kernels();
const Kernels* avx2_kernels();    // nullptr when not compiled in
const Kernels* avx512_kernels();  // nullptr when not compiled in
const Kernels* avx512bf16_kernels();  // avx512's with AVX512-BF16 bf16 output

// Everything below is per translation unit (an unnamed namespace): the
// vectorised kernels are compiled with AVX flags, and a shared inline copy
// could otherwise be linked into the reference and run on a CPU without them.
namespace {

TZ_HD inline float max_of(float a, float b) { return a > b ? a : b; }
TZ_HD inline float min_of(float a, float b) { return a < b ? a : b; }
TZ_HD inline float abs_of(float x) { return bits_as<float>(bits_as<std::uint32_t>(x) & 0x7fffffffu); }
TZ_HD inline std::size_t end_of(std::size_t n, std::size_t begin, std::size_t block) { return n - begin < block ? n : begin + block; }

// Below this absmax (or range) a block gets scale 0: 2^-120 keeps qmax/absmax finite.
inline constexpr float kMinRange = 0x1p-120f;

TZ_HD inline float load(const float* p, std::size_t i) { return p[i]; }
TZ_HD inline float load(const BF16* p, std::size_t i) { return bf16_to_f32(p[i].bits); }
TZ_HD inline float load(const F16* p, std::size_t i) { return f16_to_f32(p[i].bits); }
TZ_HD inline void store(float* p, std::size_t i, float v) { p[i] = v; }
TZ_HD inline void store(BF16* p, std::size_t i, float v) { p[i].bits = f32_to_bf16(v); }
TZ_HD inline void store(F16* p, std::size_t i, float v) { p[i].bits = f32_to_f16(v); }

TZ_HD inline bool finite(float x) { return (bits_as<std::uint32_t>(x) & 0x7f800000u) != 0x7f800000u; }

TZ_HD inline int qmax(const QuantSpec& s) {
  if (s.asymmetric) return s.bits == 8 ? 255 : 15;
  return s.bits == 8 ? 127 : 7;
}

// Per-block statistics gathered in the first pass.
struct Stats {
  float absmax = 0, min = std::numeric_limits<float>::infinity(), max = -std::numeric_limits<float>::infinity();
  bool bad = false;
  TZ_HD void add(float x) {
    bad = bad || !finite(x);
    absmax = max_of(absmax, abs_of(x));
    min = min_of(min, x);
    max = max_of(max, x);
  }
};

// What the second pass needs: q = rne((x - offset) * inv), x' = q * scale + offset.
struct Params {
  float scale = 0, offset = 0, inv = 0;
  bool bad = false;
};

TZ_HD inline Params params(const Stats& st, const QuantSpec& s) {
  Params p;
  const float q = static_cast<float>(qmax(s));
  if (st.bad) {
    p.bad = true;
    p.scale = p.offset = std::numeric_limits<float>::quiet_NaN();
    return p;
  }
  if (!s.asymmetric) {
    if (st.absmax >= kMinRange) p.scale = st.absmax / q, p.inv = q / st.absmax;
    return p;
  }
  const float range = st.max - st.min;
  if (!finite(range)) {  // the range overflows fp32
    p.bad = true;
    p.scale = p.offset = std::numeric_limits<float>::quiet_NaN();
    return p;
  }
  p.offset = st.min + 0.0f;  // canonical +0: kernels may find -0 or +0 as the minimum
  if (range >= kMinRange) p.scale = range / q, p.inv = q / range;
  return p;
}

// Round to nearest, ties to even (the default FP environment on the host).
TZ_HD inline int round_half_even(float v) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float2int_rn(v);
#else
  return static_cast<int>(std::nearbyint(v));
#endif
}

TZ_HD inline int round_clamp(float v, int lo, int hi) {
  const int q = round_half_even(v);
  return q < lo ? lo : q > hi ? hi : q;
}

TZ_HD inline int quantize_one(float x, const Params& p, const QuantSpec& s) {
  if (p.bad) return 0;
  const int qm = qmax(s);
  return s.asymmetric ? round_clamp((x - p.offset) * p.inv, 0, qm) : round_clamp(x * p.inv, -qm, qm);
}

TZ_HD inline float dequantize_one(int q, const Params& p, const QuantSpec& s) {
  const float v = static_cast<float>(q) * p.scale;
  return s.asymmetric ? v + p.offset : v;
}

// Storage of the quantised values: int8 one per byte (signed when symmetric);
// int4 two per byte, element 2k in the low nibble, 2k+1 in the high nibble
// (two's complement when symmetric).
TZ_HD inline void put(std::uint8_t* data, std::size_t i, int q, const QuantSpec& s) {
  if (s.bits == 8) {
    data[i] = static_cast<std::uint8_t>(q);
    return;
  }
  std::uint8_t& b = data[i / 2];
  const std::uint8_t nib = static_cast<std::uint8_t>(q) & 0x0f;
  b = (i % 2) ? static_cast<std::uint8_t>((b & 0x0f) | (nib << 4)) : static_cast<std::uint8_t>((b & 0xf0) | nib);
}

TZ_HD inline int get(const std::uint8_t* data, std::size_t i, const QuantSpec& s) {
  if (s.bits == 8) return s.asymmetric ? data[i] : static_cast<std::int8_t>(data[i]);
  const int nib = (data[i / 2] >> ((i % 2) * 4)) & 0x0f;
  return s.asymmetric ? nib : ((nib ^ 8) - 8);
}

// Reads and writes the parameters of block b in the packed layout.
TZ_HD inline Params read_params(const void* packed, std::size_t n, std::size_t b, const QuantSpec& s) {
  const auto* base = static_cast<const std::uint8_t*>(packed) + quant_data_bytes(n, s);
  Params p;
  if (s.asymmetric) {
    AsymBlock a;
    std::memcpy(&a, base + b * sizeof(AsymBlock), sizeof a);
    p.scale = a.scale, p.offset = a.min;
  } else {
    SymBlock y;
    std::memcpy(&y, base + b * sizeof(SymBlock), sizeof y);
    p.scale = y.scale;
  }
  return p;
}

TZ_HD inline void write_params(void* packed, std::size_t n, std::size_t b, const Params& p, const QuantSpec& s) {
  auto* base = static_cast<std::uint8_t*>(packed) + quant_data_bytes(n, s);
  if (s.asymmetric) {
    const AsymBlock a{p.scale, p.offset};
    std::memcpy(base + b * sizeof(AsymBlock), &a, sizeof a);
  } else {
    const SymBlock y{p.scale};
    std::memcpy(base + b * sizeof(SymBlock), &y, sizeof y);
  }
}

// The scalar reference over elements [begin, end) of one block.
template <class In>
TZ_HD void quantize_range(const In* src, std::size_t begin, std::size_t end, const Params& p, const QuantSpec& s,
                    std::uint8_t* data) {
  for (std::size_t i = begin; i < end; ++i) put(data, i, quantize_one(load(src, i), p, s), s);
}

template <class Out>
TZ_HD void dequantize_range(const std::uint8_t* data, std::size_t begin, std::size_t end, const Params& p,
                      const QuantSpec& s, Out* dst) {
  for (std::size_t i = begin; i < end; ++i) store(dst, i, dequantize_one(get(data, i, s), p, s));
}

TZ_HD inline void dequantize_add_range(const std::uint8_t* data, std::size_t begin, std::size_t end, const Params& p,
                                 const QuantSpec& s, float* acc) {
  for (std::size_t i = begin; i < end; ++i) acc[i] += dequantize_one(get(data, i, s), p, s);
}

}  // namespace
}  // namespace tierzero::quant
