// Checks a run's TensorBoard folder against its metrics file, as
// tests/run_logs_test.sh uses it:  event_check TB_DIR METRICS.jsonl
// Decodes every record of every events file (name order, as TensorBoard
// reads them) with its CRCs checked, drops the steps a later file's
// SessionLog START supersedes (TensorBoard's purge of a dead run's
// orphaned steps), and requires that what is left holds exactly the
// metrics rows' steps with their values (as floats). Prints one line per
// file and exits 0, or names the first difference and exits 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>

#include "event_file.h"
#include "tensorboard_event.pb.h"
#include "tensorboard_log.h"

namespace fs = std::filesystem;
namespace tb = tierzero::tensorboard;
using nlohmann::json;

namespace {
int fail(const std::string& what) {
  std::fprintf(stderr, "event_check: FAIL: %s\n", what.c_str());
  return 1;
}

// The value a metrics row gives a tag (written out here, not taken from
// step_log.cc), or NaN when it has none; infinity for a null (the JSON of
// a value that was not finite).
double number(const json& v) { return v.is_null() ? INFINITY : v.get<double>(); }
double expected(const json& row, const std::string& tag) {
  static const std::map<std::string, std::string> top = {
      {"train/loss", "loss"},       {"val/loss", "val_loss"},         {"train/lr", "lr"},
      {"train/grad_norm", "grad_norm"}, {"train/loss_scale", "loss_scale"}, {"perf/tokens_per_s", "tokens_per_s"},
      {"perf/tflops", "tflops"},    {"time/step_s", "step_time_s"}};
  const auto slash = tag.find('/');
  const std::string group = tag.substr(0, slash), key = tag.substr(slash + 1);
  if (auto it = top.find(tag); it != top.end()) return row.contains(it->second) ? number(row[it->second]) : NAN;
  if (group == "bytes") return number(row.at("bytes_per_level").at(key));
  if (group == "memory") return number(row.at("memory_bytes").at(key));
  if (tag == "time/checkpoint_save_s") return number(row.at("checkpoint").at("save_s"));
  if (group == "time") return number(row.at("breakdown").at(0).at(key));
  return NAN;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return fail("usage: event_check TB_DIR METRICS.jsonl");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(argv[1]))
    if (e.path().filename().string().find("tfevents") != std::string::npos) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::map<std::int64_t, std::map<std::string, float>> steps;  // what TensorBoard would show
  std::size_t records = 0;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    tierzero::cli::RecordScan scan;
    try {
      scan = tierzero::cli::read_records(bytes.str(), f.string());
    } catch (const std::exception& e) {
      return fail(e.what());
    }
    int scalars = 0;
    std::int64_t start = -1;
    for (std::size_t i = 0; i < scan.records.size(); ++i) {
      tb::Event e;
      if (!e.ParseFromString(scan.records[i])) return fail(f.string() + ": record " + std::to_string(i) + " is no Event");
      if (i == 0 && e.file_version() != tierzero::cli::kEventFileVersion) return fail(f.string() + ": the first record is no file version");
      if (e.has_session_log() && e.session_log().status() == tb::SessionLog::START) {
        start = e.step();
        steps.erase(steps.lower_bound(e.step()), steps.end());
      }
      if (!e.has_summary()) continue;
      if (steps.count(e.step())) return fail(f.string() + ": step " + std::to_string(e.step()) + " twice");
      for (const auto& v : e.summary().value()) steps[e.step()][v.tag()] = v.simple_value();
      ++scalars;
    }
    records += scan.records.size();
    std::printf("%s: %zu records, %d steps of scalars, session start %lld, %zu torn bytes\n", f.filename().c_str(), scan.records.size(),
                scalars, static_cast<long long>(start), scan.torn_bytes);
  }
  std::ifstream metrics(argv[2]);
  std::string line;
  std::size_t rows = 0, values = 0;
  while (std::getline(metrics, line)) {
    const json row = json::parse(line);
    const std::int64_t step = row.at("step").get<std::int64_t>();
    const auto it = steps.find(step);
    if (it == steps.end()) return fail("step " + std::to_string(step) + " of the metrics is not in the event files");
    for (const auto& [tag, got] : it->second) {
      const double want = expected(row, tag);
      if (std::isnan(want)) return fail("step " + std::to_string(step) + ": tag " + tag + " has no metrics field");
      if (std::isinf(want) ? std::isfinite(got) : got != static_cast<float>(want))
        return fail("step " + std::to_string(step) + " " + tag + ": " + std::to_string(got) + " in the events, " + std::to_string(want) + " in the metrics");
      ++values;
    }
    if (row.contains("val_loss") && !it->second.count("val/loss")) return fail("step " + std::to_string(step) + ": val/loss missing");
    if (!it->second.count("train/loss")) return fail("step " + std::to_string(step) + ": train/loss missing");
    steps.erase(it);
    ++rows;
  }
  if (!steps.empty()) return fail("step " + std::to_string(steps.begin()->first) + " is in the event files but not in the metrics");
  std::printf("ok: %zu files, %zu records; %zu metrics rows, %zu values equal\n", files.size(), records, rows, values);
  return 0;
}
