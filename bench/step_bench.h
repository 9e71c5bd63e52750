// Times whole training steps (forward + backward + AdamW) of the
// single-rank trainer: the tierzero side of bench/gpt_vs_pytorch.py.
#pragma once
#include <string>

#include "tierzero/train_config.h"

namespace tierzero::bench {

struct StepBenchResult {
  double step_time_s = 0;  // median of the timed steps
  double tokens_per_s = 0;
  double tflops = 0;       // model FLOPs (GptConfig::flops_per_token) per second
};

StepBenchResult run_step_bench(const TrainConfig& cfg, int threads, int warmup, int steps);
std::string to_json_line(const TrainConfig& cfg, int threads, const StepBenchResult& r);

}  // namespace tierzero::bench
