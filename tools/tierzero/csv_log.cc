#include "csv_log.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "tierzero/error.h"

namespace tierzero::cli {

namespace {
namespace fs = std::filesystem;

// Rewrites a CSV monitor file with its header and only its rows of steps up to last_kept (a checkpoint's step).
void keep_rows_through(const fs::path& path, std::int64_t last_kept) {
  std::ifstream in(path, std::ios::binary);
  std::string line, kept;
  bool header = true;
  while (std::getline(in, line)) {
    const std::string row = line + "\n";
    if (header) {
      header = false;
      if (line.rfind("step,", 0) != 0) return;  // not a CSV monitor file: leave it
      kept += row;
      continue;
    }
    char* end = nullptr;
    const long long step = std::strtoll(line.c_str(), &end, 10);
    if (end != line.c_str() && *end == ',' && step <= last_kept && !in.eof()) kept += row;  // a torn last row goes too
  }
  in.close();
  const fs::path tmp = path.string() + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out << kept;
  out.close();
  std::error_code ec;
  TZ_CHECK(out && (fs::rename(tmp, path, ec), !ec), ConfigError, "cannot rewrite CSV monitor file '" + path.string() + "'");
}
}  // namespace

std::string csv_file_name(const std::string& tag) {
  std::string name = tag;
  for (char& c : name)
    if (c == '/' || c == ' ') c = '_';
  return name + ".csv";
}

CsvLog::CsvLog(const std::string& dir, std::int64_t first_step) : dir_(dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  TZ_CHECK(!ec && fs::is_directory(dir), ConfigError,
           "cannot write CSV monitor files to '" + dir + "' (" + (ec ? ec.message() : "not a directory") + ")");
  {
    const std::string probe = (fs::path(dir) / ".tierzero-write-test").string();
    LogFile test(probe, "a test file in the CSV monitor folder", false);
  }
  fs::remove(fs::path(dir) / ".tierzero-write-test", ec);
  if (first_step > 0)
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".csv") keep_rows_through(e.path(), first_step);
}

void CsvLog::write(const StepScalars& s) {
  for (const auto& [tag, value] : s.values) {
    auto it = files_.find(tag);
    if (it == files_.end()) {
      const fs::path path = fs::path(dir_) / csv_file_name(tag);
      std::error_code ec;
      const bool fresh = !fs::exists(path) || fs::file_size(path, ec) == 0;
      try {
        it = files_.emplace(tag, std::make_unique<LogFile>(path.string(), "CSV monitor file", false)).first;
      } catch (const ConfigError& e) {
        std::fprintf(stderr, "tierzero: warning: %s\n", e.message().c_str());
        it = files_.emplace(tag, nullptr).first;
      }
      if (it->second && fresh) it->second->append("step," + tag.substr(tag.rfind('/') + 1) + "\r\n");
    }
    if (it->second) it->second->append(fmt::format("{},{}\r\n", s.step, value));
  }
}

}  // namespace tierzero::cli
