// tierzero report RUN [RUN]: one self-contained HTML page of a training
// run (run_report.h) from its metrics file, its save folder, or both.
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "run_report.h"
#include "tierzero/error.h"

namespace tierzero::cli {

namespace {
namespace fs = std::filesystem;

struct ReportArgs {
  std::vector<std::string> runs;
  std::string output, system;
};

// The metrics file and save folder the arguments name: a file is the
// metrics; a folder is a save folder (it has `latest` or meta.json) or
// holds one in ckpt/, and the metrics are its metrics.jsonl or its
// parent's.
struct RunFiles {
  std::string metrics, save_dir;
  std::vector<std::string> looked;  // where metrics were looked for
};

bool is_save_dir(const fs::path& p) { return fs::exists(p / "latest") || fs::exists(p / "meta.json"); }

RunFiles find_run(const std::vector<std::string>& args) {
  RunFiles f;
  for (const std::string& a : args) {
    fs::path p(a);
    TZ_CHECK(fs::exists(p), ConfigError, "'" + a + "' does not exist (give a metrics file, a save folder, or both)");
    if (!fs::is_directory(p)) {
      f.metrics = a;
      continue;
    }
    if (!p.has_filename()) p = p.parent_path();  // "ckpt/"
    std::vector<fs::path> candidates = {p / "metrics.jsonl"};
    if (is_save_dir(p)) f.save_dir = p.string(), candidates.push_back(p.parent_path() / "metrics.jsonl");  // beside the save folder
    else if (is_save_dir(p / "ckpt")) f.save_dir = (p / "ckpt").string();
    for (const fs::path& m : candidates) {
      if (!f.metrics.empty()) break;
      f.looked.push_back(m.string());
      if (fs::is_regular_file(m)) f.metrics = m.string();
    }
  }
  if (f.metrics.empty()) {
    std::string looked;
    for (const std::string& l : f.looked) looked += (looked.empty() ? "" : ", ") + l;
    TZ_THROW(ConfigError, "no metrics for the report: looked for " + (looked.empty() ? std::string("nothing") : looked) +
                              " (give the run's --metrics file too)");
  }
  return f;
}

// The system the prediction prices: --system, else a measured-system.toml
// (tierzero bench comm --write-system) beside the metrics or the save folder.
void pick_system(const ReportArgs& a, const RunFiles& f, RunReportInput& in) {
  if (!a.system.empty()) {
    in.system = load_system(a.system);
    in.system_origin = "--system " + a.system;
    return;
  }
  std::vector<fs::path> near = {fs::path(f.metrics).parent_path() / "measured-system.toml"};
  if (!f.save_dir.empty()) near.push_back(fs::path(f.save_dir).parent_path() / "measured-system.toml");
  for (const fs::path& p : near)
    if (fs::is_regular_file(p)) {
      in.system = load_system(p.string());
      in.system_origin = "measured: " + p.string();
      return;
    }
}

int run_report_command(const ReportArgs& a) {
  TZ_CHECK(a.runs.size() <= 2, ConfigError, "report takes a metrics file, a save folder, or one of each");
  const RunFiles f = find_run(a.runs);
  RunReportInput in{read_run_metrics(f.metrics), std::nullopt, f.save_dir, std::nullopt, ""};
  if (!f.save_dir.empty()) in.checkpoint = CheckpointReader(f.save_dir).meta();
  pick_system(a, f, in);
  for (const std::string& n : in.metrics.notes) std::fprintf(stderr, "tierzero: note: %s\n", n.c_str());
  const std::string out = a.output.empty() ? (fs::path(f.metrics).parent_path() / "report.html").string() : a.output;
  write_page(out, run_report(in));
  std::printf("%s\n", out.c_str());
  return 0;
}
}  // namespace

void add_report_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* c = app.add_subcommand("report", "Write one HTML page of a training run: loss, throughput, step time, bytes per level "
                                             "and memory against the simulator's prediction, restarts marked");
  c->add_option("run", a->runs, "The run's metrics file (--metrics), its save folder (--save-dir), or both; a folder holding "
                               "metrics.jsonl and ckpt/ (the demo's) names both")
      ->required();
  c->add_option("--output,-o", a->output, "The page to write (default: report.html beside the metrics)");
  c->add_option("--system", a->system,
                "The system to predict bytes, memory and step time on: a preset or a system file (default: a "
                "measured-system.toml beside the metrics or the save folder, as tierzero bench comm --write-system writes it)");
  c->callback([a, &ctx] { ctx.exit_code = run_report_command(*a); });
}

}  // namespace tierzero::cli
