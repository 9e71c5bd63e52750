#include "step_log.h"

#include "csv_log.h"
#include "tensorboard_log.h"

namespace tierzero::cli {

namespace {
// Metrics row field -> tag, for the numbers at the row's top level.
constexpr std::pair<const char*, const char*> kTopLevel[] = {
    {"loss", "train/loss"},           {"val_loss", "val/loss"},          {"lr", "train/lr"},
    {"grad_norm", "train/grad_norm"}, {"loss_scale", "train/loss_scale"}, {"tokens_per_s", "perf/tokens_per_s"},
    {"tflops", "perf/tflops"},        {"step_time_s", "time/step_s"}};
// Rank 0's breakdown (--breakdown): where its step's time went.
constexpr const char* kBreakdown[] = {"forward_s",      "backward_s",  "optimizer_s",  "gather_wait_s", "reduce_wait_s",
                                      "control_wait_s", "slot_wait_s", "tensor_wait_s"};

void add_numbers(StepScalars& s, const nlohmann::ordered_json& object, const std::string& prefix) {
  for (const auto& [key, v] : object.items())
    if (v.is_number()) s.values.emplace_back(prefix + key, v.get<double>());
}
}  // namespace

StepScalars step_scalars(const nlohmann::ordered_json& row) {
  StepScalars s;
  s.step = row.at("step").get<std::int64_t>();
  s.wall_time = row.value("time", 0.0);
  for (const auto& [field, tag] : kTopLevel)
    if (const auto it = row.find(field); it != row.end() && it->is_number()) s.values.emplace_back(tag, it->get<double>());
  if (const auto b = row.find("breakdown"); b != row.end() && b->is_array() && !b->empty())
    for (const char* key : kBreakdown)
      if (const auto it = b->front().find(key); it != b->front().end()) s.values.emplace_back(std::string("time/") + key, it->get<double>());
  if (const auto c = row.find("checkpoint"); c != row.end() && c->contains("save_s"))
    s.values.emplace_back("time/checkpoint_save_s", c->at("save_s").get<double>());
  if (const auto b = row.find("bytes_per_level"); b != row.end()) add_numbers(s, *b, "bytes/");
  if (const auto m = row.find("memory_bytes"); m != row.end()) add_numbers(s, *m, "memory/");
  return s;
}

std::vector<std::unique_ptr<StepLog>> open_step_logs(const StepLogDirs& dirs, std::int64_t first_step) {
  std::vector<std::unique_ptr<StepLog>> logs;
  if (!dirs.tensorboard.empty()) logs.push_back(std::make_unique<TensorBoardLog>(dirs.tensorboard, first_step));
  if (!dirs.csv.empty()) logs.push_back(std::make_unique<CsvLog>(dirs.csv, first_step));
  return logs;
}

}  // namespace tierzero::cli
