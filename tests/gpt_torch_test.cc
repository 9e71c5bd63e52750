// gpt-tiny against PyTorch (tests/golden/make_gpt_golden.py): logits, loss,
// every gradient, 10 AdamW steps (losses and final weights) from the same
// weights and batch. Tolerances: fp32 through different GEMM kernels and
// summation orders: 1e-4 relative to each tensor's largest magnitude for
// logits and gradients, 1e-5 on the loss, 2e-4 on weights after 10 steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ckpt/safetensors.h"
#include "fp32_matmul.h"
#include "model/gpt.h"
#include "torch_reference.h"

#ifndef TZ_GOLDEN_DIR
#error "TZ_GOLDEN_DIR must name tests/golden"
#endif

namespace tierzero {
namespace {

using test::expect_close;
using test::slice;

struct Golden {
  SafeTensorsFile f = read_safetensors(std::string(TZ_GOLDEN_DIR) + "/gpt_tiny.safetensors");
  GptLayout layout{gpt_preset("gpt-tiny")};
  std::vector<float> params = std::vector<float>(layout.num_params());
  std::vector<int> tokens, targets;
  int B, T;
  Golden() {
    for (const TensorInfo& t : layout.tensors()) {
      const auto v = f.at("param." + t.name).as_f32();
      std::copy(v.begin(), v.end(), params.begin() + static_cast<std::ptrdiff_t>(t.offset));
    }
    const SafeTensor& tok = f.at("tokens");
    B = static_cast<int>(tok.shape[0]), T = static_cast<int>(tok.shape[1]);
    tokens = tok.as_i32();
    targets = f.at("targets").as_i32();
  }
};

class GptVsPyTorch : public test::WithFp32Matmul<> {};

TEST_F(GptVsPyTorch, LogitsLossAndEveryGradient) {
  Golden g;
  GptModel<float> model(g.layout, g.B, g.T);
  std::vector<float> grads(g.layout.num_params(), 0.0f);
  const double loss = model.forward_backward(g.params.data(), grads.data(), g.tokens.data(), g.targets.data());
  EXPECT_NEAR(loss, g.f.at("loss").as_f64()[0], 1e-5);
  // Logits are recomputed from the final LayerNorm output.
  std::vector<float> logits(static_cast<std::size_t>(g.B) * g.T * g.layout.config().vocab);
  model.forward(g.params.data(), g.tokens.data(), g.targets.data());
  model.logits(g.params.data(), g.params.data() + g.layout.units()[g.layout.head_unit()].offset, logits.data());
  expect_close(logits, g.f.at("logits").as_f32(), 1e-4, "logits");
  for (const TensorInfo& t : g.layout.tensors()) expect_close(slice(grads, t), g.f.at("grad." + t.name).as_f32(), 1e-4, "grad." + t.name);
}

TEST_F(GptVsPyTorch, TenAdamWStepsWithClipping) {
  Golden g;
  test::train_like_the_reference(g.layout, g.B, g.T, g.params, g.tokens, g.targets, g.f.at("losses").as_f64());
  for (const TensorInfo& t : g.layout.tensors()) expect_close(slice(g.params, t), g.f.at("final." + t.name).as_f32(), 2e-4, "final." + t.name);
}

}  // namespace
}  // namespace tierzero
