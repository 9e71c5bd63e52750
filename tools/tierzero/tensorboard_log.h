// TensorBoard event files of a run's scalars (docs/formats.md): one file
// per writer start, `events.out.tfevents.<unix seconds>.<host>.<pid>.<n>`
// in the folder (TensorBoard's convention: a resumed run adds a file and
// its steps continue), TFRecord framing (event_file.h) around Event
// protocol buffers (tensorboard_event.proto): the file version first, a
// SessionLog START at a resumed run's first step, then one Event per step
// whose Summary holds every scalar as a float. Each step's record is
// written whole and flushed. Rank 0; one thread.
#pragma once
#include <memory>
#include <string>

#include "log_file.h"
#include "step_log.h"

namespace tierzero::cli {

class TensorBoardLog final : public StepLog {
 public:
  // Creates `dir` and a new events file in it; throws ConfigError naming
  // the folder when it cannot. first_step > 0: a run resumed after that step.
  TensorBoardLog(const std::string& dir, std::int64_t first_step);
  void write(const StepScalars& s) override;
  const std::string& path() const { return file_->path(); }

 private:
  std::unique_ptr<LogFile> file_;
};

// The file version TensorBoard's readers expect in the first record.
inline constexpr const char* kEventFileVersion = "brain.Event:2";

}  // namespace tierzero::cli
