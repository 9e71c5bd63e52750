#include "run_metrics.h"

#include <fstream>
#include <sstream>

#include "tierzero/error.h"

namespace tierzero::cli {

RunMetrics read_run_metrics(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TZ_CHECK(in, FormatError, "cannot read metrics file '" + path + "'");
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  RunMetrics m;
  m.path = path;
  std::size_t at = 0, line_no = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    const bool last = end == std::string::npos || end + 1 == text.size();
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const bool cut = end == text.size();  // no newline: the writer never finished it
    at = end + 1;
    ++line_no;
    nlohmann::ordered_json row = nlohmann::ordered_json::parse(line, nullptr, false);
    const bool good = row.is_object() && row.contains("step") && row["step"].is_number_integer();
    if (!good || cut) {
      if (last) {
        m.notes.push_back("the last line of '" + path + "' (line " + std::to_string(line_no) +
                          ") is cut short, as a killed run leaves it: read the " + std::to_string(m.rows.size()) + " rows before it");
        break;
      }
      TZ_THROW(FormatError, "'" + path + "' line " + std::to_string(line_no) + " is not a metrics row (a JSON object with a whole \"step\")");
    }
    if (const auto r = row.find("resumed"); r != row.end())
      m.restarts.push_back({r->value("from_step", row["step"].get<std::int64_t>() - 1), r->value("redone", std::int64_t{0})});
    if (const auto r = row.find("run"); r != row.end()) m.run = *r;
    m.rows.push_back(std::move(row));
  }
  TZ_CHECK(!m.rows.empty(), FormatError, "metrics file '" + path + "' holds no rows");
  return m;
}

}  // namespace tierzero::cli
