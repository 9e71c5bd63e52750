// Random test inputs shared by the model-level tests (gemm_test.cc,
// gpu_model_test.cc): Gaussian values with no exact zeros (a zero would
// hide a sign or a relative-error problem).
#pragma once
#include <random>
#include <vector>

namespace tierzero::test {

inline std::vector<float> random_vector(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) {
    x = d(g);
    if (x == 0.0f) x = scale * 1e-3f;
  }
  return v;
}

}  // namespace tierzero::test
