#include "tierzero/optim.h"

#include <algorithm>
#include <cmath>

namespace tierzero {

void adamw_update(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v, std::size_t n,
                  const AdamWConfig& c, std::int64_t t, float lr, bool decay) {
  // Bias corrections in double, as PyTorch computes them in Python floats.
  const double bc1 = 1.0 - std::pow(static_cast<double>(c.beta1), static_cast<double>(t));
  const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(c.beta2), static_cast<double>(t))));
  const float step = static_cast<float>(lr / bc1);
  const float keep = decay ? 1.0f - lr * c.weight_decay : 1.0f;
  // Vectorised element by element: the same fp32 operations, the same bits.
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = c.beta1 * m[i] + (1.0f - c.beta1) * g[i];
    v[i] = c.beta2 * v[i] + (1.0f - c.beta2) * g[i] * g[i];
    const float denom = std::sqrt(v[i]) / bc2_sqrt + c.eps;
    p[i] = p[i] * keep - step * m[i] / denom;
  }
}

namespace {
// DeepSpeed's schedulers (the formulas in tierzero/optim.h), in double as Python computes them.
double deepspeed_lr(const LrSchedule& c, std::int64_t s) {
  const double W = static_cast<double>(std::max<std::int64_t>(2, c.warmup)), step = static_cast<double>(s), peak = c.lr;
  const double g = c.log_warmup ? std::log(step + 1) / std::log(W) : step / W;
  const double T = static_cast<double>(c.total);
  if (c.shape == LrShape::ds_warmup_cosine) {
    if (step < W) return peak * (c.warmup_min_ratio + g * (1.0 - c.warmup_min_ratio));
    // The progress stops at 1 (DeepSpeed's current WarmupCosineLR): past total_num_steps the rate stays at its floor.
    const double wave = (1 + std::cos(M_PI * std::min(1.0, (step - W + 1) / std::max(1.0, T - W)))) / 2;
    return peak * std::max(0.0, c.cos_min_ratio + (1.0 - c.cos_min_ratio) * wave);
  }
  const double low = c.warmup_min_lr;
  if (step < W) return low + (peak - low) * g;
  if (c.shape == LrShape::ds_warmup) return peak;
  return low + (peak - low) * std::max(0.0, (T - step) / std::max(1.0, T - W));
}
}  // namespace

float LrSchedule::at(std::int64_t s) const {
  if (shape != LrShape::warmup_cosine) return static_cast<float>(s == 0 ? (shape == LrShape::ds_warmup_cosine ? 0.0 : warmup_min_lr)
                                                                        : deepspeed_lr(*this, s - 1));
  if (s < warmup) return lr * static_cast<float>(s + 1) / static_cast<float>(warmup);
  const double span = static_cast<double>(std::max<std::int64_t>(1, total - warmup));
  const double progress = std::min(1.0, static_cast<double>(s - warmup) / span);
  const double min_lr = static_cast<double>(lr) * min_lr_ratio;
  return static_cast<float>(min_lr + 0.5 * (1.0 + std::cos(M_PI * progress)) * (lr - min_lr));
}

float clip_coefficient(double norm, float max_norm) {
  if (max_norm <= 0) return 1.0f;
  return static_cast<float>(std::min(1.0, max_norm / (norm + 1e-6)));
}

}  // namespace tierzero
