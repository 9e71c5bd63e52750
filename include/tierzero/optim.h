// AdamW (Loshchilov & Hutter, decoupled weight decay) with PyTorch's update
// order, the warmup + cosine learning-rate schedule and the global-norm
// clipping coefficient. Pure functions over ranges of fp32 elements, so
// the same code updates a whole model or one rank's shard.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tierzero {

struct AdamWConfig {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
};

// One AdamW step (t >= 1) on n elements, as torch.optim.AdamW:
//   p *= 1 - lr * wd (when decay), m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
//   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
void adamw_update(float* p, const float* g, float* m, float* v, std::size_t n, const AdamWConfig& c, std::int64_t t,
                  float lr, bool decay);

struct LrSchedule {
  float lr = 1e-3f;
  float min_lr_ratio = 0.1f;    // cosine floor = lr * min_lr_ratio
  std::int64_t warmup = 0;      // linear warmup steps
  std::int64_t total = 1;       // total steps (end of the cosine)
  // Learning rate of step `step` (0-based).
  float at(std::int64_t step) const;
};

// Factor that brings a gradient of global L2 norm `norm` down to `max_norm`
// (1 when it is already below; torch.nn.utils.clip_grad_norm_'s formula).
float clip_coefficient(double norm, float max_norm);

}  // namespace tierzero
