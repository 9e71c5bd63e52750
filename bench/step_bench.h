// Times whole training steps (forward + backward + AdamW) of the
// single-rank trainer: the tierzero side of bench/gpt_vs_pytorch.py. Beside
// it, in the same run, the machine's GEMM rates on a 1024^3 product (fp32
// through tierzero's GEMMs and through the environment's OpenBLAS; bf16),
// so a step's FLOP rate can be read against the best sgemm.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tierzero/train_config.h"

namespace tierzero::bench {

struct StepBenchResult {
  double step_time_s = 0;  // median of the timed steps
  double tokens_per_s = 0;
  double tflops = 0;       // model FLOPs (GptConfig::flops_per_token) per second
  MatmulType matmul = MatmulType::fp32;  // what the step's GEMMs computed in
  // bf16 steps: each product shape ("MxNxK TA") and the oneDNN kernel it ran on.
  std::vector<std::pair<std::string, std::string>> bf16_kernels;
};

// GFLOP/s of C = A B^T, 1024^3, best of several, on `threads` threads;
// with the CPU's one-thread instruction peaks (model/cpu_peaks.h) in the JSON.
struct GemmRates {
  double sgemm = 0;           // tierzero's fp32 GEMM (oneDNN)
  double openblas_sgemm = 0;  // OpenBLAS's, with the kernels it picked for this CPU and environment
  double bf16 = 0;            // tierzero's bf16 GEMM (0 without bf16 units)
  double best_sgemm() const { return sgemm > openblas_sgemm ? sgemm : openblas_sgemm; }
};

StepBenchResult run_step_bench(const TrainConfig& cfg, int threads, int warmup, int steps);
GemmRates measure_gemm_rates(int threads);
std::string to_json_line(const TrainConfig& cfg, int threads, const StepBenchResult& r, const GemmRates& rates);

}  // namespace tierzero::bench
