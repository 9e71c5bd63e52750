#include <cmath>

#include "tierzero/error.h"
#include "tierzero/trainer.h"

namespace tierzero {

LocalTrainer::LocalTrainer(const TrainConfig& cfg, const TokenData& data)
    : cfg_(cfg),
      layout_(cfg.model),
      sampler_(data, cfg.effective_seq_len(), cfg.seed),
      model_(layout_, cfg.micro_batch, cfg.effective_seq_len(), cfg.recompute) {
  cfg_.validate();
  TZ_CHECK(data.vocab() <= static_cast<std::uint32_t>(cfg.model.vocab), ConfigError,
           "data '" + data.origin() + "' has vocabulary " + std::to_string(data.vocab()) + " but the model's is " +
               std::to_string(cfg.model.vocab));
  if (cfg_.schedule.total <= 0) cfg_.schedule.total = cfg_.steps;
  const std::size_t n = layout_.num_params();
  master_.resize(n);
  gpt_init(layout_, cfg.seed, master_.data());
  m_.assign(n, 0.0f), v_.assign(n, 0.0f), grads_.assign(n, 0.0f);
  stored_.resize(n * dtype_size(cfg.param_dtype));
  if (cfg.param_dtype != DType::f32) compute_.resize(n);
  tokens_.resize(static_cast<std::size_t>(cfg.micro_batch) * cfg.effective_seq_len());
  targets_.resize(tokens_.size());
  refresh_working();
}

void LocalTrainer::refresh_working() {
  if (cfg_.param_dtype == DType::f32) return;  // compute straight from the master copy
  from_f32(cfg_.param_dtype, master_.data(), stored_.data(), master_.size());
  to_f32(cfg_.param_dtype, stored_.data(), compute_.data(), master_.size());
}

double LocalTrainer::evaluate(const TokenData& val, int batches) {
  const float* params = cfg_.param_dtype == DType::f32 ? master_.data() : compute_.data();
  double sum = 0;
  for (int b = 0; b < batches; ++b) {
    fill_eval_batch(val, cfg_.effective_seq_len(), batches, b, cfg_.micro_batch, tokens_.data(), targets_.data());
    sum += model_.forward(params, tokens_.data(), targets_.data());
  }
  return sum / batches;
}

StepStats LocalTrainer::step() {
  StepStats s;
  s.step = step_;
  const float* params = cfg_.param_dtype == DType::f32 ? master_.data() : compute_.data();
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  for (int micro = 0; micro < cfg_.grad_accum; ++micro) {
    sampler_.fill(static_cast<std::uint64_t>(step_), micro, 0, cfg_.micro_batch, tokens_.data(), targets_.data());
    s.loss += model_.forward_backward(params, grads_.data(), tokens_.data(), targets_.data(), 1.0f / cfg_.grad_accum);
  }
  s.loss /= cfg_.grad_accum;
  double sq = 0;
  for (float g : grads_) sq += static_cast<double>(g) * g;
  s.grad_norm = std::sqrt(sq);
  s.lr = cfg_.schedule.at(step_);
  s.tokens = static_cast<std::int64_t>(cfg_.micro_batch) * cfg_.grad_accum * cfg_.effective_seq_len();
  s.skipped = !std::isfinite(s.grad_norm);
  if (!s.skipped) {
    const float coef = clip_coefficient(s.grad_norm, cfg_.grad_clip);
    if (coef < 1.0f)
      for (float& g : grads_) g *= coef;
    for (const TensorInfo& t : layout_.tensors())
      adamw_update(master_.data() + t.offset, grads_.data() + t.offset, m_.data() + t.offset, v_.data() + t.offset,
                   t.numel, cfg_.adamw, updates_ + 1, s.lr, t.decay);
    ++updates_;
    refresh_working();
  }
  ++step_;
  return s;
}

}  // namespace tierzero
