// The fit of the simulator's constants (tierzero/corpus_fit.h) and the
// corpus by publication: the data files' values are what the constants
// apply as, the objective is its closed form, and a publication held out
// is priced with constants that never saw it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "tierzero/corpus.h"
#include "tierzero/corpus_fit.h"
#include "tierzero/sensitivity.h"
#include "tierzero/system.h"

namespace tierzero {
namespace {

std::vector<PublishedRun> of(const std::vector<std::string>& publications) {
  std::vector<PublishedRun> out;
  for (const PublishedRun& r : builtin_corpus())
    for (const std::string& p : publications)
      if (r.publication == p) out.push_back(r);
  return out;
}

// The presets' constants applied change no prediction: with_constants writes each figure as the data files hold it.
TEST(CorpusFit, ThePresetsConstantsAreTheDataFiles) {
  const std::vector<RunCheck> plain = check_corpus(builtin_corpus());
  const std::vector<PublishedRun> applied = with_constants(builtin_corpus(), preset_constants());
  const std::vector<RunCheck> checks = check_corpus(applied);
  ASSERT_EQ(checks.size(), plain.size());
  for (std::size_t i = 0; i < checks.size(); ++i) EXPECT_EQ(checks[i].predicted, plain[i].predicted) << checks[i].run->id;
}

// median + 0.5 x a[int(0.9 (n - 1))] + 0.25 x a[int(0.97 (n - 1))] of the sorted |errors|: for |errors| 1%..10% (n = 10,
// median 5.5%, both quantiles at index 8: 9%), 0.055 + 0.045 + 0.0225; an out-of-memory run has no error and does not count.
TEST(CorpusFit, TheObjectiveIsItsClosedForm) {
  std::vector<PublishedRun> runs(11);
  std::vector<RunCheck> checks(11);
  for (int i = 0; i < 11; ++i) {
    runs[i].oom = i == 10;
    checks[i].run = &runs[i];
    checks[i].error = (i % 2 ? -1 : 1) * 0.01 * (10 - i);
  }
  EXPECT_NEAR(fit_score(checks), 0.055 + 0.5 * 0.09 + 0.25 * 0.09, 1e-15);
  EXPECT_EQ(fit_score({}), 0);
}

// By publication: every run with a published figure counted once; torchtitan's docs give 9 rows, one of them out of
// memory; Megatron-Bridge's three runs' median is their middle one's and their largest the largest.
TEST(CorpusFit, BySourceCountsEveryRunOnceWithItsErrors) {
  const std::vector<RunCheck> checks = check_corpus(builtin_corpus());
  const std::vector<SourceSummary> sources = summarize_by_source(checks);
  int runs = 0;
  for (const SourceSummary& s : sources) runs += s.runs;
  const CorpusSummary all = summarize(checks);
  EXPECT_EQ(runs, all.trained + all.ratios);
  const auto find = [&](const std::string& name) {
    for (const SourceSummary& s : sources)
      if (s.source == name) return s;
    ADD_FAILURE() << name;
    return SourceSummary{};
  };
  EXPECT_EQ(find("pytorch/torchtitan").runs, 8);
  EXPECT_EQ(find("mosaicml/llm-foundry").runs, 213);
  EXPECT_EQ(find("arxiv.org/abs/2501.04266").runs, 3);
  const SourceSummary bridge = find("NVIDIA-NeMo/Megatron-Bridge");
  ASSERT_EQ(bridge.runs, 3);
  std::vector<double> errors;
  for (const RunCheck& c : checks)
    if (c.run->publication == bridge.source) errors.push_back(std::abs(c.error));
  ASSERT_EQ(errors.size(), 3u);
  std::sort(errors.begin(), errors.end());
  EXPECT_EQ(bridge.median_abs_error, errors[1]);
  EXPECT_EQ(bridge.max_abs_error, errors[2]);
}

// Three publications: torchtitan's and FlagPerf's runs in the fitting half, the Hugging Face blog's in the checking half
// (one cycle of the fit, to stay quick). A publication held out is priced with the fit of the others: change its own
// published figures and its constants do not move, while the fit of everything does; the checking half's publication
// gets the fit of the whole fitting half.
TEST(CorpusFit, LeaveOneSourceOutNeverFitsOnTheSourceItPrices) {
  constexpr int kCycles = 1;
  std::vector<PublishedRun> runs = of({"pytorch/torchtitan", "FlagOpen/FlagPerf", "huggingface/blog"});
  const std::vector<HeldOutSource> held = leave_one_source_out(runs, kCycles);
  ASSERT_EQ(held.size(), 3u);
  EXPECT_EQ(held[0].summary.source, "FlagOpen/FlagPerf");
  EXPECT_EQ(held[1].summary.source, "huggingface/blog");
  EXPECT_EQ(held[2].summary.source, "pytorch/torchtitan");
  EXPECT_EQ(held[0].summary.runs, 3);
  EXPECT_EQ(held[1].summary.runs, 2);
  EXPECT_EQ(held[2].summary.runs, 8);
  EXPECT_EQ(held[1].constants, fit_constants(runs, kCycles, neutral_constants()));
  // No run of these three is FP8: nothing moves the FP8 efficiency from the middle of its bounds, whatever the data
  // files hold (NeMo's runs fitted it there).
  EXPECT_EQ(held[2].constants.at("h100_fp8"), (0.2 + 0.709) / 2);
  EXPECT_NE(preset_constants().at("h100_fp8"), (0.2 + 0.709) / 2);
  EXPECT_EQ(held[2].constants, fit_constants(of({"FlagOpen/FlagPerf", "huggingface/blog"}), kCycles, neutral_constants()));
  const FittedConstants whole = fit_constants(runs, kCycles, neutral_constants());
  for (PublishedRun& r : runs)
    if (r.publication == "pytorch/torchtitan" && !r.oom) r.tokens_per_s_per_gpu *= 1.5;
  const std::vector<HeldOutSource> moved = leave_one_source_out(runs, kCycles);
  EXPECT_EQ(moved[2].constants, held[2].constants);
  EXPECT_NE(fit_constants(runs, kCycles, neutral_constants()), whole);
  // Its errors are its runs priced with those constants.
  const std::vector<PublishedRun> priced = with_constants(of({"pytorch/torchtitan"}), held[2].constants);
  double largest = 0;
  for (const RunCheck& c : check_corpus(priced)) largest = std::max(largest, c.run->oom ? 0.0 : std::abs(c.error));
  EXPECT_EQ(held[2].summary.max_abs_error, largest);
}

// A run over several nodes whose source does not state its network (network_stated = false) is priced as a range: the
// prediction at every level's bandwidth x 0.75 and x 1.25, around the prediction. The corpus has 24 such runs in the
// fitting half (15 of llm-foundry's H100 table, torchtitan's 8 on 64 A100, NeMo's GPT-3 5B on 64 H100) and 26 in the
// checking half (llm-foundry's large-scale H100 table's 18, NeMo's and Megatron-Bridge's 7 model-parallel runs over
// several nodes, the JUPITER benchmark's 13B on 8 nodes); its single-node rows with an unstated network and every row
// that states one have none.
TEST(CorpusFit, ARunWhoseNetworkIsUnstatedIsPricedAsARange) {
  const std::vector<RunCheck> checks = check_corpus(builtin_corpus());
  std::map<std::string, int> ranges;
  for (const RunCheck& c : checks) {
    const bool several_nodes = c.run->input.topology().fanout(Level::world) > 1;
    EXPECT_EQ(c.network_range(), !c.run->network_stated && several_nodes && !c.run->oom) << c.run->id;
    if (!c.network_range()) continue;
    ++ranges[c.run->half];
    EXPECT_EQ(c.network_low, simulate(with_efficiency(c.run->input, 1 - kSensitivity, 1)).tokens_per_s_per_device) << c.run->id;
    EXPECT_EQ(c.network_high, simulate(with_efficiency(c.run->input, 1 + kSensitivity, 1)).tokens_per_s_per_device) << c.run->id;
    EXPECT_LE(c.network_low, c.predicted) << c.run->id;
    EXPECT_GE(c.network_high, c.predicted) << c.run->id;
  }
  EXPECT_EQ(ranges, (std::map<std::string, int>{{"check", 26}, {"fit", 24}}));
  const CorpusSummary s = summarize(checks);
  EXPECT_EQ(s.network_ranges, 50);
}

// A device the corpus never checked, or a system file's own figures, is uncalibrated and no error band applies to it.
TEST(CorpusFit, AnUncalibratedDeviceHasNoErrorBand) {
  EXPECT_EQ(uncalibrated(device_preset("a100-80gb").device), "");
  EXPECT_EQ(uncalibrated(device_preset("v100-sxm").device), "");  // the ZeRO++ blog's speedups check it
  // A system file without based_on (its figures its own).
  const System own = parse_system_toml("memory_gb = 80\npeak_tflops = 989\nmemory_bandwidth_gbs = 3350\n"
                                       "[[level]]\nname = \"world\"\nbandwidth_gbs = 50\nlatency_us = 5\n",
                                       "own.toml");
  EXPECT_EQ(uncalibrated(own.device), "the system file names no device preset (based_on): its figures are its own, none of them checked "
                                      "against the corpus");
  EXPECT_EQ(uncalibrated(device_preset("gh200").device),
            "no published run on gh200 in the corpus (data/published-runs.toml) checks its figures");
  for (const DeviceSpec& d : {own.device, device_preset("gh200").device, device_preset("h200").device})
    EXPECT_EQ(error_band(d, "fsdp"), "does not apply: the device is uncalibrated: " + uncalibrated(d)) << d.name;
  // A GEMM efficiency measured on the machine (bench comm --write-system's "measured: ..."): calibrated there.
  DeviceSpec measured = own.device;
  measured.sources.emplace_back("gemm_efficiency", "measured: the simulator's compute of a gpt-mini step");
  EXPECT_EQ(uncalibrated(measured), "");
}

}  // namespace
}  // namespace tierzero
