#include "html_page.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "page_assets.h"
#include "tierzero/error.h"

namespace tierzero::cli {

namespace {
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// JSON that cannot end the <script> element it sits in.
std::string script_json(const nlohmann::ordered_json& j) {
  std::string s = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::string out;
  for (char c : s) out += c == '<' ? std::string("\\u003c") : std::string(1, c);  // '<' only occurs inside strings
  return out;
}
}  // namespace

std::string render_page(const HtmlPage& page) {
  std::string html = "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + escape(page.title) +
                     "</title>\n<meta name=\"generator\" content=\"tierzero, ECharts " + std::string(kEChartsVersion) + "\">\n<style>\n" +
                     std::string(kPageCss) + "</style>\n<script>\n" + std::string(kEChartsJs) + "\n</script>\n<script>\n" +
                     std::string(kPageJs) + "</script>\n</head>\n<body>\n<h1>" + escape(page.title) + "</h1>\n";
  if (!page.subtitle.empty()) html += "<p class=\"subtitle\">" + escape(page.subtitle) + "</p>\n";
  if (!page.notes.empty()) {
    html += "<div class=\"notes\">\n";
    for (const std::string& n : page.notes) html += "<p>" + escape(n) + "</p>\n";
    html += "</div>\n";
  }
  nlohmann::ordered_json charts = nlohmann::ordered_json::array();
  for (const PageSection& s : page.sections) {
    html += "<h2>" + escape(s.heading) + "</h2>\n";
    if (!s.facts.empty()) {
      html += "<table class=\"facts\">\n";
      for (const auto& [label, text] : s.facts) html += "<tr><td>" + escape(label) + "</td><td>" + escape(text) + "</td></tr>\n";
      html += "</table>\n";
    }
    for (const std::string& p : s.paragraphs) html += "<p>" + escape(p) + "</p>\n";
    if (s.charts.empty()) continue;
    html += "<div class=\"charts\">\n";
    for (const Chart& c : s.charts) {
      const std::string id = "chart-" + std::to_string(charts.size());
      html += "<div><div class=\"chart\" id=\"" + id + "\"></div>";
      if (!c.note.empty()) html += "<p class=\"chart-note\">" + escape(c.note) + "</p>";
      html += "</div>\n";
      charts.push_back({{"id", id}, {"marks", c.marks}, {"option", c.option}});
    }
    html += "</div>\n";
  }
  html += "<script type=\"application/json\" id=\"tz-charts\">" + script_json(charts) + "</script>\n</body>\n</html>\n";
  return html;
}

void write_page(const std::string& path, const HtmlPage& page) {
  const std::string html = render_page(page);
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  TZ_CHECK(f, ConfigError, "cannot write '" + path + "' (" + std::strerror(errno) + ")");
  const bool ok = std::fwrite(html.data(), 1, html.size(), f) == html.size();
  const bool closed = std::fclose(f) == 0;
  std::error_code ec;
  if (!(ok && closed)) std::filesystem::remove(tmp, ec);
  TZ_CHECK(ok && closed, ConfigError, "cannot write '" + path + "' (the disk is full?)");
  std::filesystem::rename(tmp, path, ec);
  TZ_CHECK(!ec, ConfigError, "cannot write '" + path + "' (" + ec.message() + ")");
}

}  // namespace tierzero::cli
