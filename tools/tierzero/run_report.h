// The report of one training run (tierzero report, docs/formats.md): loss
// (training and validation) against steps and tokens, throughput, the step
// time stacked by its breakdown, bytes per level per step beside the
// simulator's prediction for the same plan, model, batch and system,
// memory per state beside the predicted and the device's limit, the plan,
// topology and model in words, and the restarts marked on every step and
// token axis. Builds the page; html_page.h writes it.
#pragma once
#include <optional>
#include <string>

#include "html_page.h"
#include "run_metrics.h"
#include "tierzero/checkpoint.h"
#include "tierzero/system.h"

namespace tierzero::cli {

struct RunReportInput {
  RunMetrics metrics;
  std::optional<CheckpointMeta> checkpoint;  // the save folder's latest checkpoint, when one was given
  std::string save_dir;
  std::optional<System> system;  // what the prediction prices; none: no prediction (a note says why)
  std::string system_origin;     // where it came from, in words
};

HtmlPage run_report(const RunReportInput& in);

}  // namespace tierzero::cli
