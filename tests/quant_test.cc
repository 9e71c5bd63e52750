// Blockwise quantisation: vector implementations byte-identical to the
// scalar reference; error bounds; zero, tiny, non-finite and bf16-only blocks.
#include "quant/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>

#include "tierzero/error.h"

namespace tierzero {
namespace {

std::vector<QuantSpec> all_specs() {
  std::vector<QuantSpec> out;
  for (int bits : {8, 4})
    for (bool asym : {false, true})
      for (std::size_t block : {256, 64, 7, 1}) out.push_back({bits, asym, block});
  return out;
}

// n values of type t: Gaussian with a per-block-varying scale, in the type's
// bit pattern. With shift > 0 the mean moves by -shift, 0, +shift sigma in
// turn every 512 elements: with shift 30 the blocks there are all negative,
// mixed and all positive (the paths where a block's max is negative or its
// min positive).
std::vector<std::byte> random_tensor(DType t, std::size_t n, unsigned seed, float sigma = 1.0f, float shift = 0.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i)
    f[i] = sigma * (d(g) * (1.0f + static_cast<float>((i / 61) % 5)) + shift * (static_cast<float>((i / 512) % 3) - 1.0f));
  std::vector<std::byte> out(n * dtype_size(t));
  from_f32(t, f.data(), out.data(), n);
  return out;
}

std::vector<float> as_f32(DType t, const std::vector<std::byte>& v) {
  std::vector<float> f(v.size() / dtype_size(t));
  to_f32(t, v.data(), f.data(), f.size());
  return f;
}

TEST(Quant, PackedSizes) {
  EXPECT_EQ(quant_packed_bytes(1000, {8, false, 256}), 1000u + 4 * 4);
  EXPECT_EQ(quant_packed_bytes(1000, {4, false, 256}), 504u + 4 * 4);
  EXPECT_EQ(quant_packed_bytes(1001, {4, true, 256}), 504u + 4 * 8);
  EXPECT_EQ(quant_packed_bytes(0, {8, false, 256}), 0u);
  EXPECT_THROW(validate({3, false, 256}), ConfigError);
  EXPECT_THROW(validate({8, false, 0}), ConfigError);
}

TEST(Quant, VectorImplementationsMatchReferenceBitForBit) {
  std::vector<QuantImpl> impls;
  for (QuantImpl i : {QuantImpl::avx2, QuantImpl::avx512, QuantImpl::avx512bf16})
    if (quant_impl_available(i)) impls.push_back(i);
  if (impls.empty()) GTEST_SKIP() << "no vector implementation on this CPU";
  unsigned seed = 1;
  // sigma 3e-37: blocks just above the smallest range (2^-120) whose small
  // steps decode to fp32 denormals (bf16 output rounds them exactly, which
  // AVX512-BF16's conversion would not).
  for (auto [sigma, shift] : {std::pair{1.0f, 0.0f}, std::pair{3e-37f, 0.0f}, std::pair{1.0f, 30.0f}})
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    for (const QuantSpec& s : all_specs()) {
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, s.block - 1, s.block, s.block + 1, 3 * s.block + 17, std::size_t{1000}, std::size_t{4099}}) {
        if (n == 0 && s.block == 1) continue;
        const auto in = random_tensor(t, n, seed++, sigma, shift);
        std::vector<std::byte> ref(quant_packed_bytes(n, s)), ref_out(n * dtype_size(t));
        std::vector<float> ref_acc(n, 0.5f);
        quantize(in.data(), t, n, s, ref.data(), QuantImpl::reference);
        dequantize(ref.data(), n, s, ref_out.data(), t, QuantImpl::reference);
        dequantize_add(ref.data(), n, s, ref_acc.data(), QuantImpl::reference);
        for (QuantImpl impl : impls) {
          std::vector<std::byte> got(ref.size()), out(ref_out.size());
          std::vector<float> acc(n, 0.5f);
          quantize(in.data(), t, n, s, got.data(), impl);
          ASSERT_EQ(got, ref) << quant_impl_name(impl) << " " << dtype_name(t) << " bits=" << s.bits << " asym=" << s.asymmetric << " B=" << s.block << " n=" << n << " shift=" << shift;
          dequantize(ref.data(), n, s, out.data(), t, impl);
          ASSERT_EQ(out, ref_out) << quant_impl_name(impl) << " dequantize";
          dequantize_add(ref.data(), n, s, acc.data(), impl);
          ASSERT_EQ(0, std::memcmp(acc.data(), ref_acc.data(), n * 4)) << quant_impl_name(impl) << " dequantize_add";
        }
      }
    }
  }
}

TEST(Quant, EveryElementWithinHalfAStep) {
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    for (const QuantSpec& s : all_specs()) {
      const std::size_t n = 2000;
      const auto in = random_tensor(t, n, 99);
      const auto x = as_f32(t, in);
      std::vector<std::byte> packed(quant_packed_bytes(n, s));
      std::vector<float> y(n);
      ASSERT_EQ(quantize(in.data(), t, n, s, packed.data()), 0u);
      dequantize(packed.data(), n, s, y.data(), DType::f32);
      for (std::size_t b = 0; b * s.block < n; ++b) {
        float lo = INFINITY, hi = -INFINITY, amax = 0;
        const std::size_t end = std::min(n, (b + 1) * s.block);
        for (std::size_t i = b * s.block; i < end; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]), amax = std::max(amax, std::abs(x[i]));
        const int qmax = s.asymmetric ? (s.bits == 8 ? 255 : 15) : (s.bits == 8 ? 127 : 7);
        const float scale = s.asymmetric ? (hi - lo) / qmax : amax / qmax;
        // Half a step, plus a few fp32 roundings of values of the block's magnitude.
        const float tol = scale / 2 * (1 + 1e-5f) + 4 * std::numeric_limits<float>::epsilon() * std::max(amax, 1e-30f);
        for (std::size_t i = b * s.block; i < end; ++i)
          ASSERT_LE(std::abs(y[i] - x[i]), tol) << "bits=" << s.bits << " asym=" << s.asymmetric << " i=" << i;
      }
    }
  }
}

double relative_l2(const std::vector<float>& x, const std::vector<float>& y) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.size(); ++i) num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]), den += double(x[i]) * x[i];
  return std::sqrt(num / den);
}

// int8 at the default block of 256; int4 at 32. (With 256-element blocks
// int4's error is inherently ~11.5%: absmax of 256 Gaussians is ~2.8 sigma,
// step 2.8/7, error step/sqrt(12). The engine uses small blocks for int4.)
TEST(Quant, RelativeErrorOfGaussianData) {
  const std::size_t n = 1 << 16;
  std::mt19937 g(5);
  std::normal_distribution<float> d;
  std::vector<float> x(n), y(n);
  for (float& v : x) v = d(g);
  for (bool asym : {false, true}) {
    for (int bits : {8, 4}) {
      const QuantSpec s{bits, asym, bits == 8 ? std::size_t{256} : std::size_t{32}};
      std::vector<std::byte> packed(quant_packed_bytes(n, s));
      quantize(x.data(), DType::f32, n, s, packed.data());
      dequantize(packed.data(), n, s, y.data(), DType::f32);
      const double err = relative_l2(x, y);
      EXPECT_LT(err, bits == 8 ? 0.01 : 0.10) << "bits=" << bits << " asym=" << asym;
      EXPECT_GT(err, 0.0);
    }
  }
}

TEST(Quant, ZeroAndTinyBlocksDecodeToZero) {
  for (const QuantSpec& s : all_specs()) {
    std::vector<float> x(3 * s.block, 0.0f), y(x.size(), 1.0f);
    for (std::size_t i = s.block; i < 2 * s.block; ++i) x[i] = (i % 2 ? 1 : -1) * 0x1p-126f;  // tiny block
    std::vector<std::byte> packed(quant_packed_bytes(x.size(), s));
    EXPECT_EQ(quantize(x.data(), DType::f32, x.size(), s, packed.data()), 0u);
    SymBlock first;
    std::memcpy(&first, packed.data() + quant_data_bytes(x.size(), s), 4);
    EXPECT_EQ(first.scale, 0.0f);
    dequantize(packed.data(), x.size(), s, y.data(), DType::f32);
    for (std::size_t i = 0; i < x.size(); ++i) {
      float block_min = x[i];
      for (std::size_t j = i / s.block * s.block; j < (i / s.block + 1) * s.block; ++j) block_min = std::min(block_min, x[j]);
      ASSERT_EQ(y[i], s.asymmetric ? block_min : 0.0f) << "asymmetric tiny blocks decode to their min; i=" << i;
    }
  }
}

TEST(Quant, NonFiniteBlocksAreReportedAndStayContained) {
  for (QuantImpl impl : {QuantImpl::reference, QuantImpl::best}) {
    for (const QuantSpec& s : all_specs()) {
      if (s.block < 7) continue;
      const std::size_t n = 4 * s.block;
      std::vector<float> x(n), y(n);
      for (std::size_t i = 0; i < n; ++i) x[i] = std::sin(static_cast<float>(i));
      x[s.block + 3] = std::numeric_limits<float>::infinity();
      x[3 * s.block + 1] = std::numeric_limits<float>::quiet_NaN();
      std::vector<std::byte> packed(quant_packed_bytes(n, s));
      EXPECT_EQ(quantize(x.data(), DType::f32, n, s, packed.data(), impl), 2u);
      dequantize(packed.data(), n, s, y.data(), DType::f32, impl);
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t b = i / s.block;
        if (b == 1 || b == 3) ASSERT_TRUE(std::isnan(y[i])) << i;
        else ASSERT_TRUE(std::isfinite(y[i]) && std::abs(y[i] - x[i]) <= (s.bits == 8 ? 0.005f : 0.075f)) << i;
      }
    }
  }
}

TEST(Quant, AsymmetricRangeOverflowIsABadBlock) {
  std::vector<float> x = {-3e38f, 3e38f, 1.0f};
  std::vector<std::byte> packed(quant_packed_bytes(3, {8, true, 256}));
  EXPECT_EQ(quantize(x.data(), DType::f32, 3, {8, true, 256}, packed.data()), 1u);
  EXPECT_EQ(quantize(x.data(), DType::f32, 3, {8, false, 256}, packed.data()), 0u);  // symmetric is fine
}

// bf16 covers fp32's range; values far outside fp16's (max 65504) must survive.
TEST(Quant, Bf16BeyondFp16Range) {
  const std::size_t n = 512;
  std::vector<std::uint16_t> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = f32_to_bf16((i % 2 ? -1.0f : 1.0f) * 1e30f * (1.0f + i % 13));
  for (QuantImpl impl : {QuantImpl::reference, QuantImpl::best}) {
    const QuantSpec s{8, false, 256};
    std::vector<std::byte> packed(quant_packed_bytes(n, s));
    EXPECT_EQ(quantize(x.data(), DType::bf16, n, s, packed.data(), impl), 0u);
    dequantize(packed.data(), n, s, y.data(), DType::bf16, impl);
    for (std::size_t i = 0; i < n; ++i) {
      const float a = bf16_to_f32(x[i]), b = bf16_to_f32(y[i]);
      ASSERT_TRUE(std::isfinite(b));
      ASSERT_NEAR(b / a, 1.0f, 0.05f) << i << " " << a << " " << b;
    }
  }
}

TEST(Quant, RoundingIsNearestEven) {
  // absmax 127 -> scale 1, inv 1: x.5 values round to even.
  std::vector<float> x = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.4f};
  std::vector<float> y(x.size());
  const QuantSpec s{8, false, 256};
  std::vector<std::byte> packed(quant_packed_bytes(x.size(), s));
  quantize(x.data(), DType::f32, x.size(), s, packed.data());
  dequantize(packed.data(), x.size(), s, y.data(), DType::f32);
  EXPECT_EQ(y, (std::vector<float>{127, 0, 2, 2, -0.0f, -2, -2, 3}));
}

}  // namespace
}  // namespace tierzero
