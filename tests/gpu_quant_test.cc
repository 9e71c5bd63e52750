// Device quantisation against the CPU reference, byte for byte; skipped
// with the reason where no CUDA device is present.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "gpu/gpu_quant.h"

namespace tierzero {
namespace {

TEST(GpuQuant, MatchesTheReferenceBitForBit) {
  TZ_NEED_GPU();
  std::mt19937 g(11);
  std::normal_distribution<float> d;
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (int bits : {8, 4})
      for (bool asym : {false, true})
        for (std::size_t block : {std::size_t{64}, std::size_t{256}})
          for (std::size_t n : {std::size_t{1}, block - 1, block + 1, std::size_t{5000}}) {
            const QuantSpec s{bits, asym, block};
            std::vector<float> f(n);
            for (float& v : f) v = d(g) * (1 + (&v - f.data()) % 7);
            if (n > 100) f[77] = 1.0f / 0.0f;  // one bad block
            std::vector<std::byte> in(n * dtype_size(t)), want(quant_packed_bytes(n, s)), got(want.size());
            from_f32(t, f.data(), in.data(), n);
            const std::size_t bad_ref = quantize(in.data(), t, n, s, want.data(), QuantImpl::reference);
            EXPECT_EQ(gpu_quantize(in.data(), t, n, s, got.data()), bad_ref);
            ASSERT_EQ(got, want) << dtype_name(t) << " bits " << bits << " asym " << asym << " B " << block << " n " << n;
            std::vector<std::byte> out_ref(n * dtype_size(t)), out(n * dtype_size(t));
            dequantize(want.data(), n, s, out_ref.data(), t, QuantImpl::reference);
            gpu_dequantize(want.data(), n, s, out.data(), t);
            ASSERT_EQ(out, out_ref);
          }
}

}  // namespace
}  // namespace tierzero
