// The kinds of chart tierzero's pages draw, as ECharts options
// (html_page.h's Chart): lines over a numeric x axis (steps, tokens,
// ranks), optionally stacked as areas, with vertical markers (restarts)
// and a second y axis; and bars over categories, grouped or stacked,
// upright or across, with a line at a value (a device's memory). Pure functions of their inputs.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "html_page.h"

namespace tierzero::cli {

enum class LineStyle { solid, dashed, points, area };

struct Series {
  std::string name;
  std::vector<std::array<double, 2>> points;  // (x, y); a non-finite y is a gap
  LineStyle style = LineStyle::solid;
  int y_axis = 0;  // 0 left, 1 right
};

struct XMarker {
  double x = 0;
  std::string label;  // "restart after 300 (2 redone)"
};

struct LineAxes {
  std::string x, y, y2;  // names with units; y2 "" for one y axis
  bool x_log2 = false;   // rank counts
  bool stacked = false;  // every area series stacked
};

Chart line_chart(const std::string& title, const LineAxes& axes, const std::vector<Series>& series,
                 const std::vector<XMarker>& markers = {});

struct BarSeries {
  std::string name;
  std::vector<double> values;  // one per category; non-finite: none
  std::string stack;           // series with the same non-empty stack pile up
};

struct YLine {
  double y = 0;
  std::string label;
};

// Which way the bars run: up from categories along x, or across from
// categories down y (long category names stay apart, one per row).
enum class BarAxis { vertical, horizontal };

// `y_name` names the value axis (x where the bars run horizontally).
Chart bar_chart(const std::string& title, const std::string& y_name, const std::vector<std::string>& categories,
                const std::vector<BarSeries>& series, const std::optional<YLine>& line = std::nullopt,
                BarAxis bars = BarAxis::vertical);

}  // namespace tierzero::cli
