// --breakdown's output (tierzero/sharded_trainer.h's StepBreakdown): one
// line per rank and step on stderr, and the metrics row's "breakdown" field.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tierzero/sharded_trainer.h"

namespace tierzero::cli {

// The ranks' breakdowns of one step as a JSON array (index = rank); checkpoint_s:
// the training thread's time in the save that followed the previous step.
nlohmann::ordered_json breakdown_json(const std::vector<StepBreakdown>& ranks, double checkpoint_s);
// One line per rank: compute, waits, and what the executor ran during them.
void print_breakdown(std::int64_t step, const std::vector<StepBreakdown>& ranks, double checkpoint_s);

}  // namespace tierzero::cli
