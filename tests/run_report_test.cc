// A run's report (tools/tierzero/run_report.h) and its metrics reader: the
// predicted bytes per level, rates, step and memory are simulate()'s for
// the run's plan, model, batch and system, memory compared like with like
// (the engine's allocations with the predicted states, the process's peak
// resident set with the prediction's total, on CPU ranks only); every
// restart is marked on the step and token axes at the step it continued
// after and at the tokens trained by then; a cut last line is noted and
// skipped, a bad line inside is an error naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "run_report.h"
#include "tierzero/error.h"
#include "tierzero/simulator.h"

namespace tierzero::cli {
namespace {
using json = nlohmann::ordered_json;

// The metrics of a 4-rank hier3 run of gpt-tiny (steps 1-6) that resumed after step 3 (its checkpoint) after dying
// after step 4 (1 step redone).
RunMetrics metrics(CheckpointMeta& meta) {
  meta.model = load_model("gpt-tiny");
  meta.train.model = meta.model;
  meta.train.micro_batch = 2, meta.train.seq_len = 32, meta.train.grad_accum = 1;
  meta.plan = fit_to(strategy_plan("hier3"), Topology::parse("package=2,node=2", 4));
  meta.topology = "package=2,node=2,world=1";
  meta.world_size = 4;
  RunMetrics m;
  m.path = "m.jsonl";
  for (int s = 1; s <= 6; ++s) {
    json row = {{"step", s}, {"loss", 5.0 - 0.1 * s}, {"tokens", 256}, {"step_time_s", 0.1}, {"tokens_per_s", 2560.0}, {"tflops", 0.001},
                {"strategy", "hier3"}, {"bytes_per_level", {{"package", 1000 + s}, {"node", 500}, {"world", 0}}},
                {"memory_bytes", {{"params", 1e5}, {"grads", 2e5}}}, {"peak_rss_bytes", 5e7}};
    if (s == 4) row["resumed"] = {{"from_step", 3}, {"redone", 1}};
    m.rows.push_back(row);
  }
  m.run = json::parse(meta.to_json());
  m.restarts = {{3, 1}};
  return m;
}

// The charts of the page, by title.
std::map<std::string, json> charts(const HtmlPage& page) {
  std::map<std::string, json> out;
  for (const PageSection& s : page.sections)
    for (const Chart& c : s.charts) out[c.option["title"]["text"].get<std::string>()] = c.option;
  return out;
}

TEST(RunReport, PredictionIsTheSimulatorsAndRestartsAreMarked) {
  CheckpointMeta meta;
  RunReportInput in{metrics(meta), std::nullopt, "", load_system("frontier"), "--system frontier"};
  const HtmlPage page = run_report(in);
  SimInput sim;
  sim.model = meta.model, sim.system = *in.system, sim.ranks = 4, sim.micro_batch = 2, sim.seq_len = 32, sim.grad_accum = 1;
  sim.plan = meta.plan, sim.dtype = meta.train.param_dtype, sim.topology_spec = meta.topology;
  const SimResult want = simulate(sim);
  const auto all = charts(page);
  const json& bytes = all.at("Bytes received per level per step (rank 0)");
  int predicted = 0;
  for (const json& s : bytes["series"]) {
    const std::string name = s["name"];
    if (name.find("(predicted)") == std::string::npos) continue;
    const int level = name.starts_with("package") ? 0 : name.starts_with("node") ? 1 : 2;
    EXPECT_DOUBLE_EQ(s["data"][0][1].get<double>(), static_cast<double>(want.bytes_per_level[level]) / 1e6) << name;
    EXPECT_EQ(s["data"].size(), 2u);
    ++predicted;
  }
  EXPECT_EQ(predicted, 3);
  EXPECT_EQ(bytes["series"][0]["data"][4][0].get<double>(), 5.0) << "the fifth row is step 5";
  EXPECT_EQ(bytes["series"][0]["data"][4][1].get<double>(), 1005 / 1e6) << "measured package bytes of step 5";
  EXPECT_DOUBLE_EQ(all.at("Tokens per second (all ranks)")["series"][1]["data"][0][1].get<double>(), want.tokens_per_s_per_device * 4);
  EXPECT_DOUBLE_EQ(all.at("TFLOPS per device")["series"][1]["data"][0][1].get<double>(), want.tflops_per_device);
  EXPECT_DOUBLE_EQ(all.at("Step time")["series"][1]["data"][0][1].get<double>(), want.step_time_s);
  for (const auto& [title, option] : all) {
    if (option["series"][0]["type"] == "bar") continue;  // categories, no time axis
    const json& mark = option["series"][0]["markLine"]["data"][0];
    EXPECT_EQ(mark["name"], "restart after 3 (1 redone)") << title;
    EXPECT_EQ(mark["xAxis"].get<double>(), title == "Loss against tokens" ? 3 * 256.0 : 3.0) << title;
  }
  // The engine's allocations beside the predicted states, without the runtime; on a GPU no resident set is compared.
  const json& states = all.at("The engine's allocations by state (rank 0)");
  ASSERT_EQ(states["series"].size(), 2u);
  const json& names = states["yAxis"]["data"];
  EXPECT_EQ(names.front(), "params");
  EXPECT_EQ(names.back(), "total");
  EXPECT_EQ(std::find(names.begin(), names.end(), "runtime"), names.end());
  EXPECT_DOUBLE_EQ(states["series"][0]["data"].back().get<double>(), 3e5 / 1e6);
  double want_states = 0;
  for (const auto& [k, v] : want.memory_bytes) want_states += k == "runtime" ? 0 : v;
  EXPECT_NEAR(states["series"][1]["data"].back().get<double>(), want_states / 1e6, 1e-9) << "MB: frontier's states of gpt-tiny";
  EXPECT_EQ(all.at("The process's memory (rank 0)")["series"].size(), 1u) << "a GPU rank's resident set is host memory";
  EXPECT_TRUE(page.notes.empty()) << page.notes.front();
}

// A tensor-parallel run's prediction is the simulator's for its mesh: the plan over the data-parallel ranks,
// the tensor group's all-reduces on its level; the batch counts the data-parallel ranks.
TEST(RunReport, ATensorParallelRunIsPredictedOnItsMesh) {
  CheckpointMeta meta;
  RunMetrics m = metrics(meta);
  meta.tp = 2, meta.tp_level = "package";
  meta.plan = fit_to(strategy_plan("zero3"), Topology::parse("package=1,node=2", 2));
  m.run = json::parse(meta.to_json());
  RunReportInput in{m, std::nullopt, "", load_system("frontier"), "--system frontier"};
  const HtmlPage page = run_report(in);
  SimInput sim;
  sim.model = meta.model, sim.system = *in.system, sim.ranks = 4, sim.micro_batch = 2, sim.seq_len = 32, sim.grad_accum = 1;
  sim.plan = meta.plan, sim.dtype = meta.train.param_dtype, sim.topology_spec = meta.topology;
  sim.mesh = {2, Level::package};
  const SimResult want = simulate(sim);
  EXPECT_GT(want.bytes_per_level[0], 0u);  // the tensor group's all-reduces
  EXPECT_DOUBLE_EQ(charts(page).at("Step time")["series"][1]["data"][0][1].get<double>(), want.step_time_s);
  bool batch = false;
  for (const PageSection& s : page.sections)
    for (const auto& [k, v] : s.facts)
      if (k == "batch") batch = v.find("x 2 data-parallel ranks = 128 tokens per step") != std::string::npos;
  EXPECT_TRUE(batch);
  EXPECT_TRUE(page.notes.empty()) << page.notes.front();
}

TEST(RunReport, ACpuRunsResidentSetIsComparedWithThePredictedTotal) {
  CheckpointMeta meta;
  System cpu_ranks = load_system("frontier");  // its levels, with CPU ranks' device (no SMs) and a process runtime
  cpu_ranks.device.sm_count = 0, cpu_ranks.device.runtime_bytes = 4.7e7;
  RunReportInput in{metrics(meta), std::nullopt, "", cpu_ranks, "a test's"};
  const auto all = charts(run_report(in));
  SimInput sim;
  sim.model = meta.model, sim.system = *in.system, sim.ranks = 4, sim.micro_batch = 2, sim.seq_len = 32, sim.grad_accum = 1;
  sim.plan = meta.plan, sim.dtype = meta.train.param_dtype, sim.topology_spec = meta.topology;
  const SimResult want = simulate(sim);
  double runtime = 0;
  for (const auto& [k, v] : want.memory_bytes) runtime += k == "runtime" ? v : 0;
  ASSERT_GT(runtime, 0);
  const json& process = all.at("The process's memory (rank 0)");
  EXPECT_EQ(process["yAxis"]["data"], json({"engine's allocations", "runtime and the rest", "process (peak RSS)"}));
  ASSERT_EQ(process["series"].size(), 2u);
  const json& measured = process["series"][0]["data"];
  EXPECT_DOUBLE_EQ(measured[0].get<double>(), 0.3) << "MB: the engine's allocations";
  EXPECT_DOUBLE_EQ(measured[1].get<double>(), 50 - 0.3) << "MB: the rest of the resident set";
  EXPECT_DOUBLE_EQ(measured[2].get<double>(), 50) << "MB: the peak resident set";
  const json& predicted = process["series"][1]["data"];
  EXPECT_NEAR(predicted[1].get<double>(), runtime / 1e6, 1e-9);
  EXPECT_NEAR(predicted[2].get<double>(), want.memory_total / 1e6, 1e-9);
  EXPECT_NEAR(predicted[0].get<double>() + predicted[1].get<double>(), predicted[2].get<double>(), 1e-9);
}

// The step-time chart's note of a CPU run much slower than predicted says why (ranks sharing cores), a GPU run's
// does not; the engine's buffers and a tied head's embedding are drawn as the simulator's "gathered".
TEST(RunReport, ACpuRunSlowerThanPredictedIsExplainedAndBuffersAreGathered) {
  auto note_of = [](const HtmlPage& page, const std::string& title) {
    for (const PageSection& s : page.sections)
      for (const Chart& c : s.charts)
        if (c.option["title"]["text"] == title) return c.note;
    return std::string("no chart '" + title + "'");
  };
  const std::string why = "Where ranks share cores";
  CheckpointMeta meta;
  RunMetrics rows = metrics(meta);
  for (json& r : rows.rows) r["memory_bytes"] = {{"params", 1e5}, {"buffers", 3e5}, {"embed", 2e5}};
  System cpu_ranks = load_system("frontier");
  cpu_ranks.device.sm_count = 0;
  const HtmlPage cpu = run_report({rows, std::nullopt, "", cpu_ranks, "a test's"});
  EXPECT_NE(note_of(cpu, "Step time").find(why), std::string::npos) << note_of(cpu, "Step time");
  const auto all = charts(cpu);
  const json& states = all.at("The engine's allocations by state (rank 0)");
  const json& names = states["yAxis"]["data"];
  const auto gathered = std::find(names.begin(), names.end(), "gathered");
  ASSERT_NE(gathered, names.end()) << names;
  EXPECT_EQ(std::find(names.begin(), names.end(), "buffers"), names.end()) << names;
  EXPECT_DOUBLE_EQ(states["series"][0]["data"][gathered - names.begin()].get<double>(), 0.5) << "MB: buffers and embed";
  const HtmlPage gpu = run_report({metrics(meta), std::nullopt, "", load_system("frontier"), "--system frontier"});
  EXPECT_EQ(note_of(gpu, "Step time").find(why), std::string::npos) << note_of(gpu, "Step time");
}

TEST(RunReport, WithoutASystemThePageSaysWhy) {
  CheckpointMeta meta;
  const HtmlPage page = run_report({metrics(meta), std::nullopt, "", std::nullopt, ""});
  ASSERT_EQ(page.notes.size(), 1u);
  EXPECT_NE(page.notes[0].find("No prediction: give --system"), std::string::npos);
  EXPECT_EQ(charts(page).at("Bytes received per level per step (rank 0)")["series"].size(), 3u) << "measured only";
}

TEST(RunMetricsFile, ACutLastLineIsNotedAndABadLineInsideIsAnError) {
  const std::string path = testing::TempDir() + "/run_report_test.jsonl";
  // A "resumed" without from_step continued after the step before its row's.
  std::ofstream(path) << "{\"step\":1,\"loss\":5}\n{\"step\":2,\"loss\":4,\"resumed\":{\"redone\":0}}\n{\"step\":3,\"lo";
  const RunMetrics m = read_run_metrics(path);
  EXPECT_EQ(m.rows.size(), 2u);
  ASSERT_EQ(m.restarts.size(), 1u);
  EXPECT_EQ(m.restarts[0].step, 1);
  EXPECT_EQ(m.restarts[0].redone, 0);
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_EQ(m.notes[0], "the last line of '" + path + "' (line 3) is cut short, as a killed run leaves it: read the 2 rows before it");
  std::ofstream(path) << "{\"step\":0}\nnot json\n{\"step\":2}\n";
  try {
    read_run_metrics(path);
    ADD_FAILURE() << "a bad line inside was read";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.message(), "'" + path + "' line 2 is not a metrics row (a JSON object with a whole \"step\")");
  }
  std::ofstream(path) << "";
  EXPECT_THROW(read_run_metrics(path), FormatError);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tierzero::cli
