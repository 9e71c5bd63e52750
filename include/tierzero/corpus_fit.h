// The simulator's fitted constants (docs/simulator.md, "Fitted and inferred constants"):
// one value per GPU type or engine, never per run, fitted once on the
// fitting half of the corpus of published runs (tierzero/corpus.h) and
// written into data/devices and data/engines by hand, each with its source.
// `tierzero validate --fit` runs that fit (bench/fit_simulator.py calls it);
// `validate --leave-one-source-out` runs it again without each publication
// and prices that publication's runs with what it gives.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "tierzero/corpus.h"

namespace tierzero {

// The constants by name:
//   a100_gemm, a100_short_k   gemm_efficiency and short_k of the A100 (a100-80gb, a100-40gb: one chip)
//   h100_gemm, h100_short_k   the same of the H100 (h100-sxm; h200 and gh200 are the same chip)
//   h100_fp8                  gemm_fp8_efficiency of the H100 (the same three devices)
//   triton                    the Triton attention kernel's rates as a fraction of FlashAttention-2's (A100s, h100-sxm)
//   torch_ew                  elementwise_traffic of PyTorch's eager kernels (engines fsdp, fsdp2, deepspeed)
//   fsdp_overlap              overlap_backward = overlap_reduce of FSDP1 (fsdp)
//   fsdp2_overlap             the same of FSDP2 (fsdp2)
//   slowdown                  overlap_slowdown of fsdp, fsdp2 and deepspeed
using FittedConstants = std::map<std::string, double>;

// Their values in the data files: where `validate --fit` starts.
FittedConstants preset_constants();
// The middle of each constant's bounds: where a fit that must not know the
// data files' values starts (leave_one_source_out: they were fitted on
// every publication of the fitting half).
FittedConstants neutral_constants();

// `runs` with `c` in place of the data files' figures on the devices and
// engines each constant belongs to, every figure rounded as the override
// file (constants_toml) writes it: 4 decimals, short_k 1.
std::vector<PublishedRun> with_constants(const std::vector<PublishedRun>& runs, const FittedConstants& c);

// The override file (`validate --override`'s form: [devices.NAME] and
// [engines.NAME] tables) that sets `c`.
std::string constants_toml(const FittedConstants& c);

// The fit's objective: median |error| + 0.5 x the 90th percentile + 0.25 x
// the 97th, over the checks with a published figure (throughput or speedup;
// 0 for none).
double fit_score(const std::vector<RunCheck>& checks);

// The constants that minimise fit_score over the fitting half of `runs`:
// a cyclic coordinate descent from `start` (each constant in turn, in name
// order, tried at 9 points across a window around its value, clipped to
// its bounds: the first cycle's window is as wide as the bounds; the
// window halved every cycle); deterministic. A constant that no run moves
// keeps its start; where the fitting half has no run with a figure, every one does.
FittedConstants fit_constants(const std::vector<PublishedRun>& runs, int cycles, const FittedConstants& start);

// One publication held out: the constants fitted from neutral_constants
// on the fitting half of every other publication's runs, and its own runs
// (both halves) priced with them.
struct HeldOutSource {
  SourceSummary summary;
  FittedConstants constants;
};
// Every publication of `runs` with a published figure, held out in turn
// (by name, as summarize_by_source).
std::vector<HeldOutSource> leave_one_source_out(const std::vector<PublishedRun>& runs, int cycles = 4);

}  // namespace tierzero
