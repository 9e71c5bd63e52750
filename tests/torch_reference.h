// What the tests against PyTorch references share (gpt_torch_test.cc,
// llama_torch_test.cc): the closeness rule, and training on the
// reference's batch as its script does (clipping at 1.0, AdamW lr 1e-3,
// betas 0.9/0.95, eps 1e-8, weight decay 0.1 on matrices).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/gpt.h"
#include "tierzero/optim.h"

namespace tierzero::test {

// max |got - want| <= rel x max |want| (+1e-7 for all-zero tensors).
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0, worst = 0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::abs(w)));
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  EXPECT_LE(worst, rel * scale + 1e-7) << what << ": max |diff| " << worst << " vs scale " << scale;
}

// expect_close over the elements whose first-step gradient (`grad`, the
// reference's) is 0 or at least 1e-5 of the tensor's largest. Between, the
// gradient is a cancellation (Qwen2's key bias: RoPE makes it nearly
// shift-invariant, down to 1e-9 of the query bias's), and AdamW's update,
// m / (sqrt(v) + eps), turns its rounding into weight differences of up to
// lr per step in either implementation; those elements are checked by the
// gradient comparison instead. At most 1% of a tensor (or 16 elements) may be left out.
inline void expect_close_where_conditioned(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& grad,
                                           double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(grad.size(), want.size()) << what;
  double gmax = 0;
  for (float g : grad) gmax = std::max(gmax, static_cast<double>(std::abs(g)));
  std::vector<float> a, b;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (grad[i] == 0 || std::abs(grad[i]) >= 1e-5 * gmax) a.push_back(got[i]), b.push_back(want[i]);
  EXPECT_LE(got.size() - a.size(), std::max<std::size_t>(got.size() / 100, 16)) << what << ": too many ill-conditioned elements";
  expect_close(a, b, rel, what);
}

// Trains `params` for want_losses.size() steps on one batch, checking each
// step's loss against the reference's to 1e-4 relative.
inline void train_like_the_reference(const GptLayout& layout, int B, int T, std::vector<float>& params, const std::vector<int>& tokens,
                                     const std::vector<int>& targets, const std::vector<double>& want_losses) {
  GptModel<float> model(layout, B, T);
  const std::size_t n = layout.num_params();
  std::vector<float> grads(n), m(n, 0.0f), v(n, 0.0f);
  const AdamWConfig adamw{0.9f, 0.95f, 1e-8f, 0.1f};
  for (std::size_t step = 0; step < want_losses.size(); ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    const double loss = model.forward_backward(params.data(), grads.data(), tokens.data(), targets.data());
    EXPECT_NEAR(loss, want_losses[step], 1e-4 * std::abs(want_losses[step])) << "step " << step;
    double sq = 0;
    for (float x : grads) sq += static_cast<double>(x) * x;
    const float coef = clip_coefficient(std::sqrt(sq), 1.0f);
    for (float& x : grads) x *= coef;
    for (const TensorInfo& t : layout.tensors())
      adamw_update(params.data() + t.offset, grads.data() + t.offset, m.data() + t.offset, v.data() + t.offset, t.numel, adamw,
                   static_cast<std::int64_t>(step) + 1, 1e-3f, t.decay);
  }
}

// One tensor of a flat arena.
inline std::vector<float> slice(const std::vector<float>& arena, const TensorInfo& t) {
  return {arena.begin() + static_cast<std::ptrdiff_t>(t.offset), arena.begin() + static_cast<std::ptrdiff_t>(t.offset + t.numel)};
}

}  // namespace tierzero::test
