// A run's metrics file (train_report.h, docs/formats.md) read back for its
// report: the rows in order, the run as it last started ("run"), and where
// it restarted ("resumed"). Plain data; any thread.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tierzero::cli {

// A writer start after the first: the step a resumed run continued after (its checkpoint's) and how many
// steps the run before it had trained past its checkpoint (0: it stopped at
// the checkpoint, as a preempted run does).
struct RunRestart {
  std::int64_t step = 0;
  std::int64_t redone = 0;
};

struct RunMetrics {
  std::string path;
  std::vector<nlohmann::ordered_json> rows;
  std::vector<RunRestart> restarts;
  std::optional<nlohmann::ordered_json> run;  // the last start's "run": meta.json's fields and recompute
  std::vector<std::string> notes;             // a last line cut short (a killed run), read up to it
};

// Throws FormatError naming the file and line for a line that is no JSON
// object with a whole "step" (but the last, which a killed run may leave
// cut short: noted and skipped), and for a file with no rows.
RunMetrics read_run_metrics(const std::string& path);

}  // namespace tierzero::cli
