// DeepSpeed's CSV monitor layout (its `csv_monitor` config section): in the
// folder, one file per scalar named after its tag with '/' and ' ' made
// '_' ("train/loss" -> train_loss.csv), a header row "step,<the tag's last
// part>", then one "step,value" row per step, lines ending "\r\n" as
// Python's csv module writes them. Unlike DeepSpeed, a resumed run keeps
// each file's rows of the steps before it (drops the rest, as the metrics
// file does) and writes no second header. Rank 0; one thread.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "log_file.h"
#include "step_log.h"

namespace tierzero::cli {

class CsvLog final : public StepLog {
 public:
  // Creates `dir` (and checks it takes files); throws ConfigError naming it when it cannot.
  CsvLog(const std::string& dir, std::int64_t first_step);
  void write(const StepScalars& s) override;

 private:
  std::string dir_;
  std::map<std::string, std::unique_ptr<LogFile>> files_;  // by tag, opened when the tag first comes
};

// The file of `tag` in DeepSpeed's layout: "train/loss" -> "train_loss.csv".
std::string csv_file_name(const std::string& tag);

}  // namespace tierzero::cli
