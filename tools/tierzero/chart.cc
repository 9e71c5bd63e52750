#include "chart.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tierzero::cli {

namespace {
using nlohmann::ordered_json;

ordered_json number_or_null(double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr); }

ordered_json frame(const std::string& title, bool legend) {
  ordered_json o;
  o["title"] = {{"text", title}, {"left", "center"}, {"textStyle", {{"fontSize", 14}}}};
  o["tooltip"] = {{"trigger", "axis"}};
  if (legend) o["legend"] = {{"top", 26}};  // plain: it wraps onto rows, and the page moves the plot below them (web/tierzero_page.js)
  o["grid"] = {{"top", legend ? 64 : 40}, {"left", 64}, {"right", 64}, {"bottom", 48}, {"containLabel", true}};
  return o;
}

ordered_json value_axis(const std::string& name, bool x) {
  ordered_json a = {{"type", "value"}, {"name", name}, {"nameLocation", "middle"}, {"nameGap", x ? 26 : 52}};
  if (x) a["min"] = "dataMin", a["max"] = "dataMax";
  else a["scale"] = true;
  return a;
}
}  // namespace

Chart line_chart(const std::string& title, const LineAxes& axes, const std::vector<Series>& series, const std::vector<XMarker>& markers) {
  Chart c;
  ordered_json o = frame(title, series.size() > 1);
  o["xAxis"] = value_axis(axes.x, true);
  if (axes.x_log2) o["xAxis"]["type"] = "log", o["xAxis"]["logBase"] = 2;
  o["yAxis"] = ordered_json::array({value_axis(axes.y, false)});
  if (!axes.y2.empty()) o["yAxis"].push_back(value_axis(axes.y2, false));
  if (axes.stacked) o["yAxis"][0]["scale"] = false;
  o["series"] = ordered_json::array();
  for (const Series& s : series) {
    ordered_json data = ordered_json::array();
    for (const auto& [x, y] : s.points) data.push_back({x, number_or_null(y)});
    c.marks += s.points.size();
    ordered_json j = {{"name", s.name}, {"type", "line"}, {"data", data}, {"yAxisIndex", s.y_axis}};
    j["showSymbol"] = s.style == LineStyle::points || s.points.size() <= 40;
    if (s.style == LineStyle::dashed) j["lineStyle"] = {{"type", "dashed"}};
    if (s.style == LineStyle::area) {
      j["areaStyle"] = ordered_json::object();
      if (axes.stacked) j["stack"] = "total";
    }
    o["series"].push_back(j);
  }
  if (!markers.empty() && !o["series"].empty()) {
    ordered_json lines = ordered_json::array();
    for (const XMarker& m : markers) lines.push_back({{"xAxis", m.x}, {"name", m.label}});
    o["series"][0]["markLine"] = {{"symbol", "none"}, {"silent", true}, {"data", lines},
                                  {"lineStyle", {{"type", "dashed"}, {"color", "#c62828"}}},
                                  {"label", {{"formatter", "{b}"}, {"position", "insideEndTop"}, {"color", "#c62828"}}}};
  }
  c.option = o;
  return c;
}

Chart bar_chart(const std::string& title, const std::string& y_name, const std::vector<std::string>& categories,
                const std::vector<BarSeries>& series, const std::optional<YLine>& line, BarAxis bars) {
  Chart c;
  const bool across = bars == BarAxis::horizontal;
  const char* category_axis = across ? "yAxis" : "xAxis";
  const char* value_axis_key = across ? "xAxis" : "yAxis";
  ordered_json o = frame(title, series.size() > 1);
  o["tooltip"] = {{"trigger", "axis"}, {"axisPointer", {{"type", "shadow"}}}};
  o[category_axis] = {{"type", "category"}, {"data", categories}, {"axisLabel", {{"interval", 0}, {"overflow", "break"}}}};
  if (across) o[category_axis]["inverse"] = true;  // the first category on top, as it reads
  o[value_axis_key] = value_axis(y_name, across);
  o[value_axis_key].erase("min"), o[value_axis_key].erase("max");
  o[value_axis_key]["scale"] = false;
  o["series"] = ordered_json::array();
  for (const BarSeries& s : series) {
    ordered_json data = ordered_json::array();
    for (double v : s.values) data.push_back(number_or_null(v));
    c.marks += s.values.size();
    ordered_json j = {{"name", s.name}, {"type", "bar"}, {"data", data}};
    if (!s.stack.empty()) j["stack"] = s.stack;
    o["series"].push_back(j);
  }
  if (line && !o["series"].empty()) {
    o["series"][0]["markLine"] = {{"symbol", "none"}, {"silent", true}, {"data", {{{value_axis_key, line->y}, {"name", line->label}}}},
                                  {"lineStyle", {{"type", "dashed"}, {"color", "#c62828"}}},
                                  {"label", {{"formatter", "{b}"}, {"position", "insideEndTop"}, {"color", "#c62828"}}}};
    double top = line->y;  // ECharts sizes the axis to the bars alone: keep the line in view
    for (std::size_t i = 0; i < categories.size(); ++i) {
      std::map<std::string, double> piles;  // by stack; an unstacked bar is its own pile
      for (std::size_t k = 0; k < series.size(); ++k)
        if (i < series[k].values.size() && std::isfinite(series[k].values[i]))
          piles[series[k].stack.empty() ? "#" + std::to_string(k) : series[k].stack] += series[k].values[i];
      for (const auto& [stack, height] : piles) top = std::max(top, height);
    }
    const double step = std::pow(10.0, std::floor(std::log10(top * 1.08))) / 2;  // a round top: 64 -> 70, 0.9 -> 1
    o[value_axis_key]["max"] = std::ceil(top * 1.08 / step) * step;
  }
  c.option = o;
  return c;
}

}  // namespace tierzero::cli
