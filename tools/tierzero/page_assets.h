// What every tierzero page carries inline (html_page.h): the chart library,
// ECharts (web/package-lock.json pins it; scripts/web_deps.sh installs it),
// and the pages' own script and style (web/), compiled in by CMake from
// those files. Constant data; any thread.
#pragma once
#include <string_view>

namespace tierzero::cli {

extern const std::string_view kEChartsJs;       // echarts.min.js
extern const std::string_view kEChartsVersion;  // its package.json version
extern const std::string_view kPageJs;          // web/tierzero_page.js
extern const std::string_view kPageCss;         // web/tierzero_page.css

}  // namespace tierzero::cli
