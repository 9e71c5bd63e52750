// The pages of `tierzero simulate --html FILE` and `tierzero plan --html
// FILE` (html_page.h), drawn from the rows the commands' --json prints
// (strategy, ranks, step_time_s, tflops_per_device, scaling_efficiency,
// memory_bytes per state, level_time_s per level (transfer, latency and quantisation),
// plan, recompute): scaling over rank counts, and the strategies or the
// candidate plans side by side (TFLOPS per device, memory per rank stacked
// by state against the device's memory, network time per level).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "html_page.h"

namespace tierzero::cli {

using SimRows = std::vector<nlohmann::ordered_json>;

// device_memory_bytes: the memory a rank may use (the system's, or the
// planner's limit); 0 draws no line.
HtmlPage simulate_page(const std::string& title, const SimRows& rows, double device_memory_bytes);
HtmlPage plan_page(const std::string& title, const SimRows& rows, double device_memory_bytes);

inline void write_simulate_html(const std::string& path, const std::string& title, const SimRows& rows, double device_memory_bytes) {
  write_page(path, simulate_page(title, rows, device_memory_bytes));
}
inline void write_plan_html(const std::string& path, const std::string& title, const SimRows& rows, double device_memory_bytes) {
  write_page(path, plan_page(title, rows, device_memory_bytes));
}

}  // namespace tierzero::cli
