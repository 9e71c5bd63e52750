// What simulate, plan and memory print and write besides their tables: the
// line that says what their figures assume (the defaults are every
// command's, tierzero/train_config.h), and the plan files of --write-plan.
#pragma once
#include <array>
#include <nlohmann/json.hpp>
#include <string>

#include "tierzero/simulator.h"

namespace tierzero::cli {

// Prints "assumed: micro-batch 4 x sequence 2048 (the model's context, at
// most 2048), 1 micro-batch per step, recompute full, bf16 parameters,
// engine tierzero" for `in`, then `note`, on stdout (stderr when `json`:
// stdout holds only JSON rows then), flushed.
void print_assumptions(const SimInput& in, bool json, const std::string& note = "");

// `v` with `decimals` places, and more where that would show fewer than 3
// significant figures (0.0312, not 0.03; 0.000154, not 0.000): the one
// format of the figures simulate, plan and memory print.
std::string figure(double v, int decimals);

// Everything `level` costs in `r`: transfer, latency and quantisation.
double level_time(const SimResult& r, Level level);
// The time each level of `topo` that joins ranks (fan-out above 1) costs in
// `r` and in `other`: "node 0.00123 vs 0.00456 s, world ..."; "no level
// joins ranks (one rank)" where none does.
std::string level_times(const SimResult& r, const SimResult& other, const Topology& topo);

// A per-level figure of a SimResult as {"package": .., "node": .., "world": ..}.
nlohmann::ordered_json per_level(const std::array<double, kNumLevels>& v);
// A SimResult's memory by part, and "total".
nlohmann::ordered_json memory_json(const SimResult& r);

// A fit in a table's column: "yes", "limit" (fits, at the memory limit:
// SimResult::at_memory_limit) or "NO".
const char* fits_word(bool fits, bool at_memory_limit);
// The line that says why a result at the memory limit
// (SimResult::at_memory_limit) runs slower than predicted, on a device of
// `capacity` bytes.
std::string memory_limit_note(const SimResult& r, double capacity);

// The sequence length `in` prices (its seq_len, else the default's).
int sequence_length(const SimInput& in);

// Writes `in`'s plan to `path` as a plan file (tierzero/plan.h) headed by
// comments: `what` (which plan of which command), the assumptions, the
// prediction and the train command that runs it (`model`: what --model
// was given). `recompute` is the recomputation the prediction priced.
// ConfigError when it cannot be written.
void write_simulated_plan(const std::string& path, const std::string& what, const std::string& model, const SimInput& in,
                          const Recompute& recompute, const SimResult& result);

}  // namespace tierzero::cli
