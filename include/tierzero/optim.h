// AdamW (Loshchilov & Hutter, decoupled weight decay) with PyTorch's update
// order, the learning-rate schedules and the global-norm
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

// The learning rate of each step. tierzero's own shape, warmup_cosine:
// linear warmup to lr over `warmup` steps, then a cosine down to
// lr * min_lr_ratio at `total`. DeepSpeed's schedulers (config "scheduler"
// type, tierzero/deepspeed_config.h), as deepspeed/runtime/lr_schedules.py
// defines them: DeepSpeed's engine steps the scheduler after each optimizer
// step, so step k runs at last_batch_iteration s = k - 1, and step 0 at the
// rate the scheduler's constructor sets (warmup_min_lr; 0 for
// WarmupCosineLR). With W = max(2, warmup) and g(s) = ln(s + 1) / ln W
// (warmup_type "log", DeepSpeed's default) or s / W ("linear"):
//   ds_warmup        s < W: warmup_min_lr + (lr - warmup_min_lr) g(s); then lr
//   ds_warmup_decay  as ds_warmup while s < W; then warmup_min_lr +
//                    (lr - warmup_min_lr) max(0, (total - s) / max(1, total - W))
//   ds_warmup_cosine s < W: lr (warmup_min_ratio + (1 - warmup_min_ratio) g(s));
//                    then lr max(0, cos_min_ratio + (1 - cos_min_ratio)
//                    (1 + cos(pi min(1, (s - W + 1) / max(1, total - W)))) / 2)
// where lr is the peak (DeepSpeed's warmup_max_lr, or the optimizer's lr
// for WarmupCosineLR).
enum class LrShape { warmup_cosine, ds_warmup, ds_warmup_decay, ds_warmup_cosine };

struct LrSchedule {
  float lr = 1e-3f;
  float min_lr_ratio = 0.1f;    // cosine floor = lr * min_lr_ratio
  std::int64_t warmup = 0;      // warmup steps
  std::int64_t total = 1;       // total steps (end of the decay)
  LrShape shape = LrShape::warmup_cosine;
  float warmup_min_lr = 0.0f;     // ds_warmup, ds_warmup_decay
  float warmup_min_ratio = 0.0f;  // ds_warmup_cosine
  float cos_min_ratio = 1e-4f;    // ds_warmup_cosine
  bool log_warmup = true;         // the ds_* shapes' warmup_type: "log" or "linear"
  // Learning rate of step `step` (0-based, counting every step run).
  float at(std::int64_t step) const;
};

// Factor that brings a gradient of global L2 norm `norm` down to `max_norm`
// (1 when it is already below; torch.nn.utils.clip_grad_norm_'s formula).
float clip_coefficient(double norm, float max_norm);

}  // namespace tierzero
