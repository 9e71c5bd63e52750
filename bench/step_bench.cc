#include "step_bench.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <vector>

#include "best_seconds.h"
#include "model/cpu_peaks.h"
#include "model/gemm.h"
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
  r.matmul = ops::matmul();
  if (r.matmul == MatmulType::bf16)
    for (const ops::Bf16GemmKernel& kernel : ops::bf16_gemm_kernels()) r.bf16_kernels.emplace_back(kernel.shape(), kernel.impl);
  return r;
}

GemmRates measure_gemm_rates(int threads) {
  constexpr int kN = 1024;
  constexpr double kFlops = 2.0 * kN * kN * kN;
  ops::set_blas_threads(threads);
  std::vector<float> a(static_cast<std::size_t>(kN) * kN), b(a.size()), c(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 0.25f, b[i] = static_cast<float>(i % 5) * 0.5f;
  const MatmulType before = ops::matmul();
  auto rate = [&](MatmulType t) {
    ops::set_matmul(t);
    return kFlops / best_seconds(5, [&] {
             ops::gemm<float>(false, true, kN, kN, kN, 1.0f, a.data(), kN, b.data(), kN, 0.0f, c.data(), kN);
           }) / 1e9;
  };
  GemmRates r;
  r.sgemm = rate(MatmulType::fp32);
  if (ops::cpu_has_bf16_units()) r.bf16 = rate(MatmulType::bf16);
  ops::set_matmul(before);
  r.openblas_sgemm = kFlops / best_seconds(5, [&] {
                       cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kN, kN, kN, 1.0f, a.data(), kN, b.data(), kN, 0.0f,
                                   c.data(), kN);
                     }) / 1e9;
  return r;
}

std::string to_json_line(const TrainConfig& cfg, int threads, const StepBenchResult& r, const GemmRates& g) {
  const double gflops = r.tflops * 1e3;
  const ops::CpuPeaks& peaks = ops::cpu_peaks();
  nlohmann::ordered_json kernels = nlohmann::ordered_json::object();
  for (const auto& [shape, impl] : r.bf16_kernels) kernels[shape] = impl;
  return nlohmann::ordered_json{{"impl", "tierzero"},
                                {"model", cfg.model.name},
                                {"micro_batch", cfg.micro_batch},
                                {"seq_len", cfg.effective_seq_len()},
                                {"threads", threads},
                                {"matmul", matmul_type_name(r.matmul)},
                                {"step_time_s", r.step_time_s},
                                {"tokens_per_s", r.tokens_per_s},
                                {"tflops", r.tflops},
                                {"cpu", ops::cpu_model_name()},
                                {"gemm", ops::gemm_info()},
                                {"sgemm_gflops", g.sgemm},
                                {"openblas_sgemm_gflops", g.openblas_sgemm},
                                {"bf16_gemm_gflops", g.bf16},
                                {"step_vs_best_sgemm", gflops / g.best_sgemm()},
                                {"fp32_fma_gflops", peaks.fp32_gflops},
                                {"bf16_dot_gflops", peaks.bf16_dot_gflops},
                                {"bf16_vs_fp32_peak", peaks.bf16_vs_fp32()},
                                {"amx", peaks.amx},
                                {"bf16_units", peaks.bf16_faster() ? "faster than fp32" : peaks.bf16_dot_gflops > 0 ? "slower than fp32" : "none"},
                                {"bf16_kernels", kernels}}
      .dump();
}

}  // namespace tierzero::bench
