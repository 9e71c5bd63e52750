#include "tensorboard_log.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "event_file.h"
#include "tensorboard_event.pb.h"
#include "tierzero/error.h"

namespace tierzero::cli {

namespace {
namespace fs = std::filesystem;
namespace tb = tierzero::tensorboard;

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

std::string framed(const tb::Event& e) {
  std::string out;
  append_record(out, e.SerializeAsString());
  return out;
}

// A new file in `dir`: the name TensorBoard's writers give theirs, with a
// last number that makes it new.
std::unique_ptr<LogFile> new_events_file(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  TZ_CHECK(!ec && fs::is_directory(dir), ConfigError,
           "cannot write TensorBoard logs to '" + dir + "' (" + (ec ? ec.message() : "not a directory") + ")");
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  const auto seconds = static_cast<long long>(now_s());
  for (int n = 0;; ++n) {
    const std::string path = (fs::path(dir) / ("events.out.tfevents." + std::to_string(seconds) + "." + host + "." +
                                               std::to_string(getpid()) + "." + std::to_string(n)))
                                 .string();
    if (fs::exists(path)) continue;
    return std::make_unique<LogFile>(path, "TensorBoard logs", true);
  }
}
}  // namespace

TensorBoardLog::TensorBoardLog(const std::string& dir, std::int64_t first_step) : file_(new_events_file(dir)) {
  tb::Event version;
  version.set_wall_time(now_s());
  version.set_file_version(kEventFileVersion);
  std::string head = framed(version);
  if (first_step > 0) {
    tb::Event start;
    start.set_wall_time(version.wall_time());
    start.set_step(first_step + 1);  // the resumed run's first step: TensorBoard drops the earlier files' steps from it on
    start.mutable_session_log()->set_status(tb::SessionLog::START);
    head += framed(start);
  }
  TZ_CHECK(file_->append(head), ConfigError, "cannot write TensorBoard logs to '" + dir + "'");
}

void TensorBoardLog::write(const StepScalars& s) {
  tb::Event e;
  e.set_wall_time(s.wall_time);
  e.set_step(s.step);
  tb::Summary* summary = e.mutable_summary();
  for (const auto& [tag, value] : s.values) {
    tb::Summary::Value* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  file_->append(framed(e));
}

}  // namespace tierzero::cli
