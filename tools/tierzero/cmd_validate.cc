// tierzero validate: the simulator against the corpus of published runs
// (data/published-runs.toml, docs/simulator.md "Validation"): per run the
// published and predicted tokens/s per GPU, the error and the predicted
// memory against the device's; per half the median and largest |error| and
// how many trained runs are called "does not fit"; per publication
// (--by-source), with the data files' constants or with those fitted
// without it (--leave-one-source-out); the fit itself (--fit).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "sim_output.h"
#include "tierzero/corpus.h"
#include "tierzero/corpus_fit.h"
#include "tierzero/error.h"
#include "tierzero/sensitivity.h"

namespace tierzero::cli {

namespace {
std::vector<RunCheck> select_half(const std::vector<RunCheck>& checks, const std::string& half) {
  std::vector<RunCheck> out;
  for (const RunCheck& c : checks)
    if (c.run->half == half) out.push_back(c);
  return out;
}

nlohmann::ordered_json figure(double v) { return v > 0 ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); }

// Where the predicted step goes (the run's own configuration; a ratio's first): compute by kind, communication
// and what of it is exposed, transfer time per level, and the memory by part.
nlohmann::ordered_json breakdown(const SimResult& r) {
  nlohmann::ordered_json j = {{"step_time_s", r.step_time_s},   {"compute_s", r.compute_s},         {"gemm_s", r.gemm_s},
                              {"attention_s", r.attention_s},   {"memory_ops_s", r.memory_ops_s},   {"recompute_s", r.recompute_s},
                              {"optimizer_s", r.optimizer_s},   {"comm_s", r.comm_s},               {"overlappable_s", r.overlappable_s},
                              {"exposed_comm_s", r.exposed_comm_s}, {"offload_s", r.offload_s}};
  j["comm_time_s"] = per_level(r.comm_time_s);
  j["memory_bytes"] = memory_json(r);
  return j;
}

struct ValidateArgs {
  std::string corpus, override_file, half;
  bool json = false, summary = false, by_source = false, leave_one_source_out = false, fit = false;
  int fit_cycles = 4;
};

nlohmann::ordered_json summary_json(const std::string& half, const CorpusSummary& s) {
  return {{"half", half},
          {"trained_runs", s.trained},
          {"median_abs_error", s.median_abs_error},
          {"max_abs_error", s.max_abs_error},
          {"speedups", s.ratios},
          {"speedup_median_abs_error", s.ratio_median_abs_error},
          {"speedup_max_abs_error", s.ratio_max_abs_error},
          {"trained_called_not_fitting", s.trained_not_fitting},
          {"oom_runs", s.oom},
          {"oom_called_fitting", s.oom_fitting},
          {"at_memory_limit", s.at_limit},
          {"at_memory_limit_within_bound", s.at_limit_within_bound},
          {"max_abs_error_below_memory_limit", s.max_abs_error_below_limit},
          {"network_ranges", s.network_ranges},
          {"within_network_range", s.within_network_range}};
}

// The id of the run of largest |error| among the ratios or the others.
std::string worst(const std::vector<RunCheck>& checks, bool ratios) {
  const RunCheck* w = nullptr;
  for (const RunCheck& c : checks)
    if (!c.run->oom && c.run->ratio() == ratios && (!w || std::abs(c.error) > std::abs(w->error))) w = &c;
  return w ? w->run->id : "";
}

void print_summary(const std::string& half, const std::vector<RunCheck>& checks) {
  const CorpusSummary s = summarize(checks);
  std::printf("%s half: %d trained runs, median |error| %.1f%%, largest %.1f%% (%s); %d called \"does not fit\"; %d out-of-memory run(s), "
              "%d called \"fits\"\n",
              half.c_str(), s.trained, 100 * s.median_abs_error, 100 * s.max_abs_error, worst(checks, false).c_str(), s.trained_not_fitting,
              s.oom, s.oom_fitting);
  if (s.at_limit > 0)
    std::printf("%s half: %d run(s) at the memory limit (predicted throughput an upper bound), %d no faster than predicted; "
                "largest |error| of the others %.1f%%\n",
                half.c_str(), s.at_limit, s.at_limit_within_bound, 100 * s.max_abs_error_below_limit);
  if (s.network_ranges > 0)
    std::printf("%s half: %d run(s) over several nodes whose source does not state the network, priced at its bandwidth x%.2f to "
                "x%.2f: %d published within that range\n",
                half.c_str(), s.network_ranges, 1 - kSensitivity, 1 + kSensitivity, s.within_network_range);
  if (s.ratios > 0)
    std::printf("%s half: %d published speedups, median |error| %.1f%%, largest %.1f%% (%s)\n", half.c_str(), s.ratios,
                100 * s.ratio_median_abs_error, 100 * s.ratio_max_abs_error, worst(checks, true).c_str());
}

nlohmann::ordered_json source_json(const SourceSummary& s) {
  return {{"source", s.source}, {"runs", s.runs}, {"median_abs_error", s.median_abs_error}, {"max_abs_error", s.max_abs_error}};
}

// One line per publication, then the median of their medians and the largest of them (`what` says how they were priced).
void print_sources(const std::vector<SourceSummary>& sources, const std::string& what) {
  std::printf("%-34s %5s %15s %8s\n", "source", "runs", "median |error|", "largest");
  std::vector<double> medians;
  const SourceSummary* worst = nullptr;
  for (const SourceSummary& s : sources) {
    std::printf("%-34s %5d %14.1f%% %7.1f%%\n", s.source.c_str(), s.runs, 100 * s.median_abs_error, 100 * s.max_abs_error);
    medians.push_back(s.median_abs_error);
    if (!worst || s.median_abs_error > worst->median_abs_error) worst = &s;
  }
  if (!worst) return;
  std::sort(medians.begin(), medians.end());
  const std::size_t n = medians.size();
  std::printf("%s: %zu sources, median of their median |error| %.1f%%, largest %.1f%% (%s)\n", what.c_str(), n,
              100 * (n % 2 ? medians[n / 2] : (medians[n / 2 - 1] + medians[n / 2]) / 2), 100 * worst->median_abs_error,
              worst->source.c_str());
}

int run_leave_one_source_out(const std::vector<PublishedRun>& runs, const ValidateArgs& a) {
  const std::vector<HeldOutSource> held = leave_one_source_out(runs, a.fit_cycles);
  std::vector<SourceSummary> sources;
  for (const HeldOutSource& h : held) {
    sources.push_back(h.summary);
    if (a.json) {
      nlohmann::ordered_json j = source_json(h.summary);
      j["constants"] = h.constants;
      std::cout << j.dump() << "\n";
    }
  }
  if (!a.json)
    print_sources(sources, "each priced with the constants fitted on the fitting half without it");
  return 0;
}

// The fit of the fitting half (bench/fit_simulator.py): the override file, then each half's summary with it and the constants.
int run_fit(const std::vector<PublishedRun>& runs, const ValidateArgs& a) {
  const FittedConstants c = fit_constants(runs, a.fit_cycles, preset_constants());
  std::printf("%s", constants_toml(c).c_str());
  const std::vector<PublishedRun> priced = with_constants(runs, c);
  const std::vector<RunCheck> checks = check_corpus(priced);
  for (const std::string half : {"fit", "check"})
    std::printf("# %s\n", summary_json(half, summarize(select_half(checks, half))).dump().c_str());
  std::printf("# %s score %.4f\n", nlohmann::ordered_json(c).dump().c_str(), fit_score(select_half(checks, "fit")));
  return 0;
}

int run_validate(const ValidateArgs& a) {
  const std::vector<PublishedRun> runs = a.corpus.empty() && a.override_file.empty() ? builtin_corpus() : load_corpus(a.corpus, a.override_file);
  if (a.leave_one_source_out) return run_leave_one_source_out(runs, a);
  if (a.fit) return run_fit(runs, a);
  std::vector<RunCheck> checks;
  for (const RunCheck& c : check_corpus(runs))
    if (a.half.empty() || c.run->half == a.half) checks.push_back(c);
  if (a.by_source) {
    if (a.json)
      for (const SourceSummary& s : summarize_by_source(checks)) std::cout << source_json(s).dump() << "\n";
    else
      print_sources(summarize_by_source(checks), "with the data files' constants");
    return 0;
  }
  if (a.json) {
    if (!a.summary)
      for (const RunCheck& c : checks) {
        nlohmann::ordered_json j = {{"id", c.run->id},
                                    {"half", c.run->half},
                                    {"gpu", c.run->gpu},
                                    {"engine", c.run->input.engine.name},
                                    {"published_tokens_per_s", figure(c.run->tokens_per_s_per_gpu)},
                                    {"predicted_tokens_per_s", c.result.tokens_per_s_per_device},
                                    {"published_speedup", figure(c.run->speedup)},
                                    {"predicted_speedup", c.run->ratio() ? nlohmann::ordered_json(c.predicted) : nlohmann::ordered_json()},
                                    {"error", c.run->oom ? nlohmann::ordered_json() : nlohmann::ordered_json(c.error)},
                                    {"oom", c.run->oom},
                                    {"memory_bytes", c.result.memory_total},
                                    {"device_memory_bytes", c.run->input.system.memory_bytes},
                                    {"fits", c.fits},
                                    {"network_stated", c.run->network_stated},
                                    {"predicted_network_range", c.network_range() ? nlohmann::ordered_json::array({c.network_low, c.network_high})
                                                                                  : nlohmann::ordered_json()},
                                    {"at_memory_limit", c.result.at_memory_limit},
                                    {"step", breakdown(c.result)}};
        std::cout << j.dump() << "\n";
      }
    for (const std::string half : {"fit", "check"})
      if (a.half.empty() || a.half == half) std::cout << summary_json(half, summarize(select_half(checks, half))).dump() << "\n";
    return 0;
  }
  if (!a.summary) {
    std::printf("%-46s %-5s %-10s %-9s %10s %10s %8s %16s %5s  %s\n", "run", "half", "gpu", "engine", "published", "predicted", "error",
                "memory (GB)", "fits", "network unstated: predicted at its bandwidth x0.75-x1.25");
    for (const RunCheck& c : checks) {
      // A ratio's figures are written "x2.20"; the memory is the run's own.
      const std::string published = c.run->oom       ? "OOM"
                                    : c.run->ratio() ? fmt::format("x{:.2f}", c.run->speedup)
                                                     : fmt::format("{:.0f}", c.run->tokens_per_s_per_gpu);
      const std::string predicted = c.run->ratio() ? fmt::format("x{:.2f}", c.predicted) : fmt::format("{:.0f}", c.predicted);
      const std::string error = c.run->oom ? "-" : fmt::format("{:+.1f}%", 100 * c.error);
      const std::string range = !c.network_range() ? "-"
                                : c.run->ratio()   ? fmt::format("x{:.2f}-x{:.2f}", c.network_low, c.network_high)
                                                   : fmt::format("{:.0f}-{:.0f}", c.network_low, c.network_high);
      std::printf("%-46s %-5s %-10s %-9s %10s %10s %8s %7.1f / %6.1f %5s  %s\n", c.run->id.c_str(), c.run->half.c_str(), c.run->gpu.c_str(),
                  c.run->input.engine.name.c_str(), published.c_str(), predicted.c_str(), error.c_str(), c.result.memory_total / 1e9,
                  c.run->input.system.memory_bytes / 1e9, fits_word(c.fits, c.result.at_memory_limit), range.c_str());
    }
  }
  for (const std::string half : {"fit", "check"})
    if (a.half.empty() || a.half == half) print_summary(half == "fit" ? "fitting" : "checking", select_half(checks, half));
  return 0;
}
}  // namespace

void add_validate_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<ValidateArgs>();
  CLI::App* v = app.add_subcommand("validate", "Check the simulator against the published runs (data/published-runs.toml)");
  v->add_option("--corpus", a->corpus, "A corpus file of the same form (default: the built-in data/published-runs.toml)");
  v->add_option("--override", a->override_file,
                "Device and engine figures to use instead of the presets' (TOML: [devices.NAME] tables of [device] keys, "
                "[engines.NAME] tables of engine keys)");
  CLI::Option* half = v->add_option("--half", a->half, "Only the fitting or the checking half")->check(CLI::IsMember({"fit", "check"}));
  CLI::Option* json = v->add_flag("--json", a->json,
                                  "One JSON object per run (with where its predicted step goes), then one per half; with --by-source or "
                                  "--leave-one-source-out, one per publication");
  CLI::Option* summary = v->add_flag("--summary", a->summary, "Only the halves' summaries");
  CLI::Option* by_source = v->add_flag("--by-source", a->by_source,
                                       "Per publication (its url's repository, or address): the runs with a published figure, their "
                                       "median and largest |error|")
                                ->excludes(summary);
  CLI::Option* loso =
      v->add_flag("--leave-one-source-out", a->leave_one_source_out,
                  "For every publication: refit the fitted constants (as --fit, from the middle of each one's bounds) on the fitting "
                  "half without it, and price its runs (both halves) with them; as --by-source, --json adding the constants")
          ->excludes(summary)
          ->excludes(by_source)
          ->excludes(half);
  v->add_flag("--fit", a->fit,
              "Fit the fitted constants on the fitting half (docs/simulator.md, \"Fitted and inferred constants\") and print them as an --override "
              "file, then each half's summary with them")
      ->excludes(summary)
      ->excludes(by_source)
      ->excludes(loso)
      ->excludes(half)
      ->excludes(json);
  v->add_option("--fit-cycles", a->fit_cycles, "Cycles of the fit's coordinate descent (--fit, --leave-one-source-out)")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  v->callback([a, &ctx] { ctx.exit_code = run_validate(*a); });
}

}  // namespace tierzero::cli
