#include "tierzero/trainer.h"

#include <cmath>

#include "model/gemm.h"
#include "model/gpt.h"
#include "tierzero/error.h"

namespace tierzero {

// The model, its fp32 master parameters and AdamW moments, and the working
// parameters in the configured dtype (compute_: their fp32 values).
struct LocalTrainer::Impl {
  Impl(const TrainConfig& c, const TokenData& data);
  // Re-derives the working parameters from master.
  void refresh_working();

  TrainConfig cfg;
  GptLayout layout;
  BatchSampler sampler;
  GptModel<float> model;
  std::vector<float> master, m, v, grads, compute;
  std::vector<std::byte> stored;  // working parameters in cfg.param_dtype
  std::vector<int> tokens, targets;
  std::int64_t step = 0;
  std::int64_t updates = 0;  // applied updates: AdamW's t (skipped steps do not count)
};

LocalTrainer::Impl::Impl(const TrainConfig& c, const TokenData& data)
    : cfg(c),
      layout(c.model),
      sampler(data, c.effective_seq_len(), c.seed),
      model(layout, c.micro_batch, c.effective_seq_len(), c.recompute) {
  cfg.validate();
  cfg.matmul = resolve_matmul(c.matmul, c.param_dtype, ops::cpu_bf16_units());
  ops::set_matmul(cfg.matmul);
  TZ_CHECK(data.vocab() <= static_cast<std::uint32_t>(c.model.vocab), ConfigError,
           "data '" + data.origin() + "' has vocabulary " + std::to_string(data.vocab()) + " but the model's is " +
               std::to_string(c.model.vocab));
  if (cfg.schedule.total <= 0) cfg.schedule.total = cfg.steps;
  const std::size_t n = layout.num_params();
  master.resize(n);
  gpt_init(layout, c.seed, master.data());
  m.assign(n, 0.0f), v.assign(n, 0.0f), grads.assign(n, 0.0f);
  stored.resize(n * dtype_size(c.param_dtype));
  if (c.param_dtype != DType::f32) compute.resize(n);
  tokens.resize(static_cast<std::size_t>(c.micro_batch) * c.effective_seq_len());
  targets.resize(tokens.size());
  refresh_working();
}

void LocalTrainer::Impl::refresh_working() {
  if (cfg.param_dtype == DType::f32) return;  // compute straight from the master copy
  from_f32(cfg.param_dtype, master.data(), stored.data(), master.size());
  to_f32(cfg.param_dtype, stored.data(), compute.data(), master.size());
}

LocalTrainer::LocalTrainer(const TrainConfig& cfg, const TokenData& data) : impl_(std::make_unique<Impl>(cfg, data)) {}
LocalTrainer::~LocalTrainer() = default;
std::int64_t LocalTrainer::steps_done() const { return impl_->step; }
MatmulType LocalTrainer::matmul() const { return impl_->cfg.matmul; }
const std::vector<float>& LocalTrainer::master() const { return impl_->master; }
std::size_t LocalTrainer::num_params() const { return impl_->layout.num_params(); }

double LocalTrainer::evaluate(const TokenData& val, int batches) {
  Impl& t = *impl_;
  const float* params = t.cfg.param_dtype == DType::f32 ? t.master.data() : t.compute.data();
  double sum = 0;
  for (int b = 0; b < batches; ++b) {
    fill_eval_batch(val, t.cfg.effective_seq_len(), batches, b, t.cfg.micro_batch, t.tokens.data(), t.targets.data());
    sum += t.model.forward(params, t.tokens.data(), t.targets.data());
  }
  return sum / batches;
}

StepStats LocalTrainer::step() {
  Impl& t = *impl_;
  StepStats s;
  s.step = t.step + 1;
  const float* params = t.cfg.param_dtype == DType::f32 ? t.master.data() : t.compute.data();
  std::fill(t.grads.begin(), t.grads.end(), 0.0f);
  for (int micro = 0; micro < t.cfg.grad_accum; ++micro) {
    t.sampler.fill(static_cast<std::uint64_t>(t.step), micro, 0, t.cfg.micro_batch, t.tokens.data(), t.targets.data());
    s.loss += t.model.forward_backward(params, t.grads.data(), t.tokens.data(), t.targets.data(), 1.0f / t.cfg.grad_accum);
  }
  s.loss /= t.cfg.grad_accum;
  double sq = 0;
  for (float g : t.grads) sq += static_cast<double>(g) * g;
  s.grad_norm = std::sqrt(sq);
  s.lr = t.cfg.schedule.at(t.step);
  s.tokens = static_cast<std::int64_t>(t.cfg.micro_batch) * t.cfg.grad_accum * t.cfg.effective_seq_len();
  s.skipped = !std::isfinite(s.grad_norm);
  if (!s.skipped) {
    const float coef = clip_coefficient(s.grad_norm, t.cfg.grad_clip);
    if (coef < 1.0f)
      for (float& g : t.grads) g *= coef;
    for (const TensorInfo& ti : t.layout.tensors())
      adamw_update(t.master.data() + ti.offset, t.grads.data() + ti.offset, t.m.data() + ti.offset, t.v.data() + ti.offset,
                   ti.numel, t.cfg.adamw, t.updates + 1, s.lr, ti.decay);
    ++t.updates;
    t.refresh_working();
  }
  ++t.step;
  return s;
}

}  // namespace tierzero
