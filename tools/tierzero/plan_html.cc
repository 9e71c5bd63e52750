#include "plan_html.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "chart.h"
#include "sim_output.h"

namespace tierzero::cli {

namespace {
using json = nlohmann::ordered_json;
constexpr const char* kLevels[] = {"package", "node", "world"};

double num(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN; }

// Everything one level costs a step: transfer, latency and quantisation (level_time).
double network_s(const json& row, const char* level) { return row.at("level_time_s").at(level).get<double>(); }

// The states of the rows' memory (all but "total"), in their first order.
std::vector<std::string> states_of(const SimRows& rows) {
  std::vector<std::string> states;
  for (const json& r : rows)
    for (const auto& [k, v] : r.at("memory_bytes").items())
      if (k != "total" && std::find(states.begin(), states.end(), k) == states.end()) states.push_back(k);
  return states;
}

// The three side-by-side charts of `rows` (one bar each, named by `names`).
std::vector<Chart> side_by_side(const SimRows& rows, const std::vector<std::string>& names, double device_memory_bytes) {
  BarSeries tflops{"TFLOPS per device", {}, ""};
  for (const json& r : rows) tflops.values.push_back(num(r, "tflops_per_device"));
  std::vector<BarSeries> memory;
  for (const std::string& s : states_of(rows)) {
    BarSeries b{s, {}, "memory"};
    for (const json& r : rows) b.values.push_back(r["memory_bytes"].contains(s) ? r["memory_bytes"][s].get<double>() / 1e9 : 0);
    memory.push_back(b);
  }
  std::vector<BarSeries> network;
  for (const char* level : kLevels) {
    BarSeries b{level, {}, ""};
    double any = 0;
    for (const json& r : rows) b.values.push_back(network_s(r, level)), any += b.values.back();
    if (any > 0) network.push_back(b);
  }
  std::optional<YLine> limit;
  if (device_memory_bytes > 0) limit = YLine{device_memory_bytes / 1e9, fmt::format("device memory {:.0f} GB", device_memory_bytes / 1e9)};
  std::vector<Chart> charts = {bar_chart("TFLOPS per device", "TFLOPS", names, {tflops}),
                               bar_chart("Memory per rank by state", "GB", names, memory, limit)};
  if (!network.empty()) charts.push_back(bar_chart("Network time per level per step", "seconds", names, network));
  return charts;
}
}  // namespace

HtmlPage simulate_page(const std::string& title, const SimRows& rows, double device_memory_bytes) {
  HtmlPage page{title, "tierzero simulate: predicted step time, throughput, scaling and memory", {}, {}};
  std::vector<std::string> strategies;
  std::map<std::string, std::vector<const json*>> by_strategy;
  int largest = 0;
  for (const json& r : rows) {
    const std::string s = r.at("strategy").get<std::string>();
    if (!by_strategy.count(s)) strategies.push_back(s);
    by_strategy[s].push_back(&r);
    largest = std::max(largest, r.at("ranks").get<int>());
  }
  PageSection scaling{"Scaling over rank counts", {}, {}, {}};
  for (const auto& [field, name, unit] : {std::tuple{"tflops_per_device", "TFLOPS per device", "TFLOPS"},
                                          std::tuple{"scaling_efficiency", "Weak-scaling efficiency", "of the smallest"},
                                          std::tuple{"step_time_s", "Step time", "seconds"}}) {
    std::vector<Series> series;
    for (const std::string& s : strategies) {
      Series line{s, {}, LineStyle::points};
      for (const json* r : by_strategy[s]) line.points.push_back({num(*r, "ranks"), num(*r, field)});
      series.push_back(line);
    }
    scaling.charts.push_back(line_chart(name, {"ranks", unit, "", true, false}, series));
  }
  page.sections.push_back(scaling);
  SimRows at_largest;
  for (const json& r : rows)
    if (r.at("ranks").get<int>() == largest) at_largest.push_back(r);
  PageSection side{fmt::format("The strategies side by side at {} ranks", largest), {}, {}, {}};
  for (const json& r : at_largest) {
    std::string text = fmt::format("{} s per step, {} tokens/s per device, {} GB per rank{}", figure(num(r, "step_time_s"), 3),
                                   figure(num(r, "tokens_per_s_per_device"), 0), figure(num(r["memory_bytes"], "total") / 1e9, 1),
                                   !r.value("fits", true)            ? ": does NOT fit"
                                   : r.value("at_memory_limit", false) ? ": at the memory limit (slower than predicted)"
                                                                       : "");
    if (r.contains("plan")) text = r["plan"].get<std::string>() + "; " + text;
    side.facts.push_back({r["strategy"].get<std::string>(), text});
  }
  side.charts = side_by_side(at_largest, strategies, device_memory_bytes);
  page.sections.push_back(side);
  return page;
}

HtmlPage plan_page(const std::string& title, const SimRows& rows, double device_memory_bytes) {
  HtmlPage page{title, "tierzero plan: the fastest plans that fit, best first", {}, {}};
  PageSection side{"The candidate plans side by side", {}, {}, {}};
  std::vector<std::string> names;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const json& r = rows[i];
    names.push_back("#" + std::to_string(i + 1));
    side.facts.push_back({names.back(), fmt::format("{} TFLOPS and {} tokens/s per device, {} s per step, {} GB per rank, recompute {}: {}",
                                                    figure(num(r, "tflops_per_device"), 2), figure(num(r, "tokens_per_s_per_device"), 0),
                                                    figure(num(r, "step_time_s"), 3), figure(num(r["memory_bytes"], "total") / 1e9, 1),
                                                    r.value("recompute", std::string("?")), r.value("plan", std::string("?")))});
  }
  side.charts = side_by_side(rows, names, device_memory_bytes);
  page.sections.push_back(side);
  return page;
}

}  // namespace tierzero::cli
