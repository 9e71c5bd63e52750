#include "tierzero/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tierzero/error.h"

namespace tierzero {
namespace {

TEST(Dtype, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::f16), 2u);
  EXPECT_EQ(dtype_size(DType::i8), 1u);
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("fp16"), DType::f16);
  EXPECT_THROW(parse_dtype("fp8"), ConfigError);
}

TEST(Dtype, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: ties go to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd mantissa) and 1+2^-6: goes up.
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(f32_to_bf16(3.0e38f), 0x7f62);  // 0x7f61b1e6 rounds up; far outside fp16's range
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::infinity()))));
}

TEST(Dtype, Bf16RoundTripOfEveryPattern) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_to_f32(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), b) << b;
  }
}

// GCC's _Float16 implements IEEE binary16 with round-to-nearest-even
// (clang has it on x86 from version 15; the tests skip where it is missing).
TEST(Dtype, F16MatchesCompilerFloat16OnEveryPattern) {
#if !defined(__FLT16_MAX__)
  GTEST_SKIP() << "this compiler has no _Float16";
#else
  for (std::uint32_t b = 0; b < 65536; ++b) {
    _Float16 h;
    const std::uint16_t bits = static_cast<std::uint16_t>(b);
    std::memcpy(&h, &bits, 2);
    const float expect = static_cast<float>(h);
    const float got = f16_to_f32(bits);
    if (std::isnan(expect)) {
      ASSERT_TRUE(std::isnan(got)) << b;
    } else {
      ASSERT_EQ(got, expect) << b;
      ASSERT_EQ(f32_to_f16(got), bits) << b;
    }
  }
#endif
}

TEST(Dtype, F16RoundingMatchesCompilerOnRandomFloats) {
#if !defined(__FLT16_MAX__)
  GTEST_SKIP() << "this compiler has no _Float16";
#else
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 2000000; ++i) {
    std::uint32_t u = bits(rng);
    // Concentrate on exponents near fp16's range, including subnormals and overflow.
    u = (u & 0x807fffffu) | ((100u + (u >> 23) % 50u) << 23);
    float f;
    std::memcpy(&f, &u, 4);
    const _Float16 h = static_cast<_Float16>(f);
    std::uint16_t expect;
    std::memcpy(&expect, &h, 2);
    ASSERT_EQ(f32_to_f16(f), expect) << f;
  }
#endif
}

TEST(Dtype, DivideElementsIsOneRoundedDivision) {
  float f[3] = {1.0f, 2.0f, 10.0f};
  divide_elements(f, 3, DType::f32, 3);
  EXPECT_EQ(f[0], 1.0f / 3.0f);
  EXPECT_EQ(f[2], 10.0f / 3.0f);
  std::uint16_t h[1] = {f32_to_bf16(6.0f)};
  divide_elements(h, 1, DType::bf16, 4);
  EXPECT_EQ(bf16_to_f32(h[0]), 1.5f);
  std::int8_t i[1] = {4};
  EXPECT_THROW(divide_elements(i, 1, DType::i8, 2), ConfigError);
}

}  // namespace
}  // namespace tierzero
