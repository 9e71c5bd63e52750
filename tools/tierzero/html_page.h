// One self-contained HTML page of tierzero's: a run's report (run_report.h),
// a plan search's or a simulation's (plan_html.h). A title, notes, then
// sections of facts ("model": "gpt-tiny, ..."), paragraphs and charts; the
// chart library and the page's script and style inlined (page_assets.h),
// each chart an ECharts option carried as JSON, so the file opens from
// disk with no network. Plain data: build one, then render or write it.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tierzero::cli {

// An ECharts option (chart.h builds them) and how many data items its
// series hold in all (the browser test checks ECharts holds as many).
struct Chart {
  nlohmann::ordered_json option;
  std::size_t marks = 0;
  std::string note;  // a line under the chart ("" for none)
};

struct PageSection {
  std::string heading;
  std::vector<std::pair<std::string, std::string>> facts;  // label, text
  std::vector<std::string> paragraphs;
  std::vector<Chart> charts;
};

struct HtmlPage {
  std::string title, subtitle;
  std::vector<std::string> notes;  // shown first: what the page could not show, and why
  std::vector<PageSection> sections;
};

// The page as one HTML document (text escaped; JSON safe inside <script>).
std::string render_page(const HtmlPage& page);
// Writes it to `path` through a temporary file renamed over it, so a
// failure leaves what was there; throws ConfigError naming the path.
void write_page(const std::string& path, const HtmlPage& page);

}  // namespace tierzero::cli
