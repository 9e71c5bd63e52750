#include "step_bench.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <vector>

#include "model/ops.h"
#include "tierzero/trainer.h"

namespace tierzero::bench {

StepBenchResult run_step_bench(const TrainConfig& cfg, int threads, int warmup, int steps) {
  ops::set_blas_threads(threads);
  const TokenData data = TokenData::load(cfg.data);
  LocalTrainer trainer(cfg, data);
  for (int i = 0; i < warmup; ++i) trainer.step();
  std::vector<double> times;
  for (int i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    trainer.step();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  StepBenchResult r;
  r.step_time_s = times[times.size() / 2];
  const double tokens = static_cast<double>(cfg.micro_batch) * cfg.grad_accum * cfg.effective_seq_len();
  r.tokens_per_s = tokens / r.step_time_s;
  r.tflops = r.tokens_per_s * cfg.model.flops_per_token(cfg.effective_seq_len()) / 1e12;
  return r;
}

std::string to_json_line(const TrainConfig& cfg, int threads, const StepBenchResult& r) {
  return nlohmann::ordered_json{{"impl", "tierzero"},          {"model", cfg.model.name},
                                {"micro_batch", cfg.micro_batch}, {"seq_len", cfg.effective_seq_len()},
                                {"threads", threads},           {"step_time_s", r.step_time_s},
                                {"tokens_per_s", r.tokens_per_s}, {"tflops", r.tflops}}
      .dump();
}

}  // namespace tierzero::bench
