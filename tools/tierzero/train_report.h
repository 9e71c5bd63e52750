// What a training run shows: a live progress bar on a terminal (step,
// loss, tokens/s, TFLOPS, ETA), plain log lines otherwise, one JSON
// object per step in the metrics file and the same step's scalars in the
// run's other logs (step_log.h: TensorBoard, DeepSpeed's CSV). Used on
// rank 0 only. Steps are numbered by the steps completed (1 after the
// first; docs/formats.md, "Step numbers"). A run that resumes after step K
// (a checkpoint's) keeps the file's rows of steps up to K (the later ones,
// from the run that went further, are dropped) and appends; its first row
// says so ("resumed").
#pragma once
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "step_log.h"
#include "tierzero/trainer.h"

namespace tierzero::cli {

class TrainReport {
 public:
  // flops_per_token: model FLOPs per trained token; devices: ranks sharing
  // the work; first_step: the steps done when this run starts (0, or a checkpoint's step).
  TrainReport(std::int64_t total_steps, double flops_per_token, int devices, const std::string& metrics_path, int log_every,
              std::int64_t first_step = 0);
  ~TrainReport();
  // Extra fields (strategy, bytes_per_level, memory_bytes) go into each metrics line as given.
  void set_extra(const std::string& key, nlohmann::ordered_json value) { extra_[key] = std::move(value); }
  // The run as it starts (model, plan, topology, batch: docs/formats.md), in this writer's first row.
  void set_run(nlohmann::ordered_json run) { run_ = std::move(run); }
  // Where each step's scalars also go.
  void add_log(std::unique_ptr<StepLog> log) { logs_.push_back(std::move(log)); }
  // val_loss: the validation loss after this step, when one was taken.
  void record(const StepStats& s, std::optional<double> val_loss = std::nullopt);
  void finish();

 private:
  std::int64_t total_;
  double flops_per_token_;
  int devices_;
  std::FILE* metrics_ = nullptr;
  int log_every_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_;
  std::map<std::string, nlohmann::ordered_json> extra_;
  nlohmann::ordered_json run_;
  std::vector<std::unique_ptr<StepLog>> logs_;
  std::int64_t first_step_ = 0, redone_ = 0;  // redone: rows of steps after first_step the file held (trained again now)
  double last_loss_ = 0;
  std::int64_t recorded_ = 0;  // steps this run
};

}  // namespace tierzero::cli
