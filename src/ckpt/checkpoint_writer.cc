#include "ckpt/checkpoint_writer.h"

#include <algorithm>
#include <filesystem>

namespace tierzero {

namespace fs = std::filesystem;

namespace {
// A warning, once per writer, when DIR holds step directories newer than NAME that this writer did not commit.
void warn_of_newer_steps(const std::string& dir, const std::string& name, bool& warned, std::vector<std::string>& warnings) {
  if (warned) return;
  std::vector<std::string> newer;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (e.is_directory() && n.rfind("step-", 0) == 0 && n > name) newer.push_back(n);  // fixed-width names sort by step
  }
  if (newer.empty()) return;
  std::sort(newer.begin(), newer.end());
  warnings.push_back("'" + dir + "' holds " + std::to_string(newer.size()) + " checkpoint(s) of another run newer than this run's " + name +
                     " (newest " + newer.back() + "); 'latest' names this run's, and --keep prunes only this run's checkpoints");
  warned = true;
}
}  // namespace

std::string CheckpointWriter::temporary(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / (".tmp-" + name)).string();
}

std::string CheckpointWriter::prepare(const std::string& dir, const std::string& name) {
  const fs::path tmp = temporary(dir, name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::remove_all(tmp, ec);
  return fs::create_directory(tmp, ec) ? "" : "cannot create '" + tmp.string() + "': " + ec.message();
}

void CheckpointWriter::abandon(const std::string& dir, const std::string& name) {
  std::error_code ec;
  fs::remove_all(temporary(dir, name), ec);
}

std::string CheckpointWriter::commit(const std::string& dir, const std::string& name, const CheckpointMeta& meta, int keep,
                                     std::vector<std::string>& warnings) {
  const fs::path tmp = temporary(dir, name), final_dir = fs::path(dir) / name;
  const std::string text = meta.to_json();
  write_file_synced((tmp / "meta.json").string(), text.data(), text.size());
  std::error_code ec;
  fs::remove_all(final_dir, ec);
  fs::rename(tmp, final_dir);
  const std::string latest = name + "\n";
  write_file_synced((fs::path(dir) / "latest.tmp").string(), latest.data(), latest.size());
  fs::rename(fs::path(dir) / "latest.tmp", fs::path(dir) / "latest");
  std::erase(committed_, name);
  committed_.push_back(name);
  while (keep > 0 && committed_.size() > static_cast<std::size_t>(keep)) {
    fs::remove_all(fs::path(dir) / committed_.front());
    committed_.erase(committed_.begin());
  }
  warn_of_newer_steps(dir, name, warned_newer_, warnings);
  return final_dir.string();
}

}  // namespace tierzero
