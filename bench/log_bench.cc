// What a run's logs cost a step (tools/tierzero/train_report.h): the time
// of TrainReport::record for a step of an 8-rank hier3 run with every field
// the metrics carry (breakdown of 8 ranks, 3 levels, memory per state,
// validation, checkpoint), with the metrics file alone and with the
// TensorBoard events and DeepSpeed's CSV files too, each flushed every
// step as in training; beside it a gpt-mini training step on this machine
// (micro-batch 8, sequence 256, 1 thread: `tierzero bench step`'s). One
// JSON line; never asserted on (docs/formats.md has the figure).
//   tierzero_log_bench [--steps N]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "breakdown_report.h"
#include "step_bench.h"
#include "train_report.h"
#include "tierzero/gpt_config.h"

namespace {
using namespace tierzero;
namespace fs = std::filesystem;

// Seconds per record() over `steps` steps of a report whose metrics go to `dir`, and whose logs are `dirs`'.
double seconds_per_step(const std::string& dir, const cli::StepLogDirs& dirs, int steps) {
  fs::create_directories(dir);
  cli::TrainReport report(steps, 1e9, 8, dir + "/metrics.jsonl", 1 << 30);
  for (auto& log : cli::open_step_logs(dirs, 0)) report.add_log(std::move(log));
  report.set_extra("strategy", "hier3");
  report.set_extra("matmul", "bf16");
  report.set_extra("memory_bytes", {{"params", 1 << 20}, {"bwd_params", 1 << 21}, {"grads", 1 << 22}, {"optim", 1 << 23},
                                    {"buffers", 1 << 20}, {"embed", 1 << 18}, {"activations", 1 << 24}});
  report.set_extra("bytes_per_level", {{"package", 123456789}, {"node", 23456789}, {"world", 3456789}});
  report.set_extra("checkpoint", {{"save_s", 0.0}, {"writing", false}});
  std::vector<StepBreakdown> ranks(8);
  for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r].step_s = 1.0 + 0.01 * r, ranks[r].forward_s = 0.3, ranks[r].backward_s = 0.6;
  report.set_extra("breakdown", cli::breakdown_json(ranks, 0.0));
  StepStats st;
  st.tokens = 8 * 8 * 256;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    st.step = i + 1, st.loss = 3.0 + 1.0 / (i + 1), st.grad_norm = 1.5, st.lr = 1e-3f;
    report.record(st, i % 500 == 499 ? std::optional<double>(st.loss + 0.1) : std::nullopt);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
}
}  // namespace

int main(int argc, char** argv) {
  int steps = 2000;
  if (argc == 3 && std::strcmp(argv[1], "--steps") == 0) steps = std::atoi(argv[2]);
  const fs::path dir = fs::temp_directory_path() / ("tierzero-log-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const double metrics_s = seconds_per_step((dir / "a").string(), {}, steps);
  const double tensorboard_s = seconds_per_step((dir / "b").string(), {(dir / "b" / "tb").string(), ""}, steps);
  const double all_s = seconds_per_step((dir / "c").string(), {(dir / "c" / "tb").string(), (dir / "c" / "csv").string()}, steps);
  fs::remove_all(dir);

  TrainConfig cfg;
  cfg.model = load_model("gpt-mini");
  cfg.data = "builtin";
  cfg.micro_batch = 8;
  cfg.seq_len = 256;
  cfg.recompute = false;  // bench step's step
  const bench::StepBenchResult step = bench::run_step_bench(cfg, 1, 1, 3);
  const double logs_s = all_s - metrics_s;
  const nlohmann::ordered_json j = {{"bench", "logs"},
                                    {"steps", steps},
                                    {"record_s", {{"metrics", metrics_s}, {"metrics_tensorboard", tensorboard_s}, {"metrics_tensorboard_csv", all_s}}},
                                    {"logs_s_per_step", logs_s},
                                    {"gpt_mini_step_s", step.step_time_s},
                                    {"logs_fraction_of_step", logs_s / step.step_time_s},
                                    {"record_fraction_of_step", all_s / step.step_time_s}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
