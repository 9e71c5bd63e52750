// The scalars a training run logs per step, and where they go besides the
// metrics file: TensorBoard event files (tensorboard_log.h) and DeepSpeed's
// CSV monitor (csv_log.h). Rank 0 only; a StepLog is used from one thread.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tierzero::cli {

// One step's scalars: TensorBoard's tag ("train/loss") and value.
struct StepScalars {
  std::int64_t step = 0;   // the metrics row's step (0-based)
  double wall_time = 0;    // seconds since the Unix epoch
  std::vector<std::pair<std::string, double>> values;
};

// The scalars of one metrics row (train_report.h); docs/formats.md lists
// the tags. Fields the row lacks give no tag.
StepScalars step_scalars(const nlohmann::ordered_json& row);

// A destination of every step's scalars. write() is called once per step,
// after the metrics row, and leaves what it wrote readable (flushed) when
// it returns; a failure to write is reported once on stderr and ends that
// log, never the run.
class StepLog {
 public:
  virtual ~StepLog() = default;
  virtual void write(const StepScalars& s) = 0;
};

// Where the logs go: "" for none. first_step: the steps done when this run
// starts (a resumed run's checkpoint step; it logs steps first_step + 1 on). Creates the folders and opens the files now, before
// any step: throws ConfigError naming the folder when it cannot.
struct StepLogDirs {
  std::string tensorboard, csv;
};
std::vector<std::unique_ptr<StepLog>> open_step_logs(const StepLogDirs& dirs, std::int64_t first_step);

}  // namespace tierzero::cli
