// The corpus of published training runs (data/published-runs.toml, or a
// file of its form, docs/simulator.md "Validation") and the simulator's
// prediction of each: throughput against the published figure, and whether
// the run fits the device (a run that was trained must; one its source says
// ran out of memory must not). `tierzero validate` prints it; `simulate`
// and `plan` quote the error band of the runs of their device and engine.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tierzero/simulator.h"

namespace tierzero {

// One published run, as the simulator takes it, and its published figure:
// tokens/s per GPU, or that it ran out of memory, or (where a source gives
// only ratios, as the ZeRO++ and Frontier papers do) its speedup in
// throughput per GPU over a second configuration, `over`: the same run with
// the keys of the row's `over` table changed (another strategy, GPU count).
struct PublishedRun {
  std::string id, half, source, gpu;
  // The publication the run comes from, what `validate --by-source` groups
  // by: its url's repository (owner/name) on GitHub, else the url without
  // its scheme; without a url, its source up to the first comma.
  std::string publication;
  SimInput input;
  double tokens_per_s_per_gpu = 0;  // published; 0 for an out-of-memory run or a ratio
  bool oom = false;
  double speedup = 0;  // published throughput ratio over `over`; 0 for none
  SimInput over;
  // false where the source does not state its network (key network_stated): the links are an assumption.
  bool network_stated = true;
  bool ratio() const { return speedup > 0; }
};

// Device and engine figures to use instead of the presets' (`--override`:
// [devices.NAME] tables of [device] keys, [engines.NAME] tables of engine
// keys), e.g. to fit or to try a what-if; empty = none.
struct CorpusOverrides {
  std::string text, origin;
};

// Parses a corpus; ConfigError naming the run and the key.
std::vector<PublishedRun> parse_corpus(std::string_view text, const std::string& origin, const CorpusOverrides& overrides = {});
// The corpus file at `path` ("": the built-in one) with the overrides file at
// `overrides_path` ("": none); ConfigError for a file that cannot be read.
std::vector<PublishedRun> load_corpus(const std::string& path, const std::string& overrides_path);
// data/published-runs.toml, compiled in: its text, and its runs.
std::string_view builtin_corpus_text();
const std::vector<PublishedRun>& builtin_corpus();

struct RunCheck {
  const PublishedRun* run = nullptr;
  SimResult result, over_result;  // over_result: of `over`, for a ratio
  double predicted = 0;           // tokens/s per GPU, or the ratio
  double error = 0;               // predicted / published - 1 (0 for an out-of-memory run)
  bool fits = false;              // the run (and `over`) fit the device
  // A run over more than one node whose source does not state its network:
  // the prediction with every level's bandwidth at 1 - kSensitivity and 1 +
  // kSensitivity times the assumed (tierzero/sensitivity.h), low first; else {0, 0}.
  double network_low = 0, network_high = 0;
  bool network_range() const { return network_high > 0; }
};

// Every run checked; with `network_ranges`, the runs a range prices
// (RunCheck::network_low, network_high) priced twice more (a fit, which
// reads only the errors, leaves them out).
std::vector<RunCheck> check_corpus(const std::vector<PublishedRun>& runs, bool network_ranges = true);

// The summary of a set of checks: over the trained runs with a published
// throughput, the median and largest |error|; the same over the published
// ratios; how many trained runs (ratios' configurations included) are
// called "does not fit"; over the out-of-memory runs, how many "fit". Of
// the trained runs with a throughput, those at the memory limit
// (SimResult::at_memory_limit: their prediction an upper bound), how many of
// them ran no faster than predicted, and the largest |error| of the others;
// of the runs priced as a range, how many published figures lie in it.
struct CorpusSummary {
  int trained = 0, ratios = 0, oom = 0;
  double median_abs_error = 0, max_abs_error = 0;
  double ratio_median_abs_error = 0, ratio_max_abs_error = 0;
  int trained_not_fitting = 0, oom_fitting = 0;
  int at_limit = 0, at_limit_within_bound = 0;
  double max_abs_error_below_limit = 0;
  // Trained runs priced as a range (RunCheck::network_range), and how many of their published figures lie within it.
  int network_ranges = 0, within_network_range = 0;
};
CorpusSummary summarize(const std::vector<RunCheck>& checks);

// The checks of the runs on `gpu` (a device preset) under `engine`, or of
// every run where either is "".
std::vector<RunCheck> select(const std::vector<RunCheck>& checks, const std::string& gpu, const std::string& engine);

// One publication's runs (PublishedRun::publication): how many have a
// published figure (tokens/s or a speedup; not the out-of-memory ones) and
// the median and largest |error| over them.
struct SourceSummary {
  std::string source;
  int runs = 0;
  double median_abs_error = 0, max_abs_error = 0;
};
// Every publication among `checks` with a published figure, by name.
std::vector<SourceSummary> summarize_by_source(const std::vector<RunCheck>& checks);

// Why nothing calibrates `device`'s figures, in words, or "" where
// something does: a run on its preset in the corpus (a throughput or a
// speedup, under any engine), or a GEMM efficiency measured on the machine
// (its source "measured: ...", as `tierzero bench comm --write-system`
// writes it). Uncalibrated: a system file's own figures (no based_on,
// DeviceSpec::name ""), or a preset no corpus run checks.
std::string uncalibrated(const DeviceSpec& device);

// The error band the corpus gives a prediction on `device` under
// `engine`, in words: "+-3.3% (median |error|; largest 12.0%) over 61
// published a100-80gb fsdp runs (tierzero validate)"; that the corpus has
// none under the engine; or, for an uncalibrated device, that no band applies.
// `parallel`: a tensor-, pipeline- or context-parallel job's, over the
// corpus's runs of that kind alone.
std::string error_band(const DeviceSpec& device, const std::string& engine, bool parallel = false);

}  // namespace tierzero
