#include "train_report.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tierzero/error.h"
#include "tierzero/process_memory.h"

namespace tierzero::cli {

namespace {
// Rewrites the metrics file at `path` (atomically) with only its rows of
// steps up to `last_kept` (a checkpoint's step); a torn last line (a crash
// mid-write) goes too. Returns how many rows of later steps it dropped.
std::int64_t keep_rows_through(const std::string& path, std::int64_t last_kept) {
  std::ifstream in(path);
  if (!in) return 0;  // nothing written yet
  std::string kept, line;
  std::int64_t dropped = 0;
  while (std::getline(in, line)) {
    const nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
    if (!row.is_object() || !row.contains("step") || !row["step"].is_number_integer()) continue;
    if (row["step"].get<std::int64_t>() <= last_kept) kept += line + "\n";
    else ++dropped;
  }
  const std::string tmp = path + ".tmp";
  std::FILE* out = std::fopen(tmp.c_str(), "w");
  TZ_CHECK(out, ConfigError, "cannot write metrics file '" + path + "'");
  const bool ok = std::fwrite(kept.data(), 1, kept.size(), out) == kept.size();
  TZ_CHECK(std::fclose(out) == 0 && ok && std::rename(tmp.c_str(), path.c_str()) == 0, ConfigError,
           "cannot rewrite metrics file '" + path + "'");
  return dropped;
}
}  // namespace

TrainReport::TrainReport(std::int64_t total, double flops_per_token, int devices, const std::string& path, int log_every,
                         std::int64_t first_step)
    : total_(total), flops_per_token_(flops_per_token), devices_(devices), log_every_(log_every), tty_(isatty(STDERR_FILENO)),
      first_step_(first_step) {
  if (!path.empty()) {
    if (first_step > 0) redone_ = keep_rows_through(path, first_step);
    metrics_ = std::fopen(path.c_str(), first_step > 0 ? "a" : "w");
    TZ_CHECK(metrics_, ConfigError, "cannot write metrics file '" + path + "'");
  }
  start_ = last_ = std::chrono::steady_clock::now();
}

TrainReport::~TrainReport() {
  if (metrics_) std::fclose(metrics_);
}

void TrainReport::record(const StepStats& s, std::optional<double> val_loss) {
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - last_).count();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  last_ = now;
  last_loss_ = s.loss;
  ++recorded_;
  const double tokens_per_s = static_cast<double>(s.tokens) / dt;
  const double tflops = tokens_per_s * flops_per_token_ / devices_ / 1e12;  // per device
  const std::int64_t done = s.step;  // the steps completed: 1 after the first
  const double eta = elapsed / static_cast<double>(recorded_) * static_cast<double>(total_ - done);
  if (metrics_ || !logs_.empty()) {
    nlohmann::ordered_json row = {{"step", s.step}, {"loss", s.loss}, {"lr", s.lr}, {"grad_norm", s.grad_norm},
                                  {"skipped", s.skipped}, {"tokens", s.tokens}, {"step_time_s", dt},
                                  {"tokens_per_s", tokens_per_s}, {"tflops", tflops}};
    if (val_loss) row["val_loss"] = *val_loss;
    for (const auto& [k, v] : extra_) row[k] = v;
    row["peak_rss_bytes"] = peak_resident_bytes();  // this rank's (the root's) host memory high-water mark so far
    row["time"] = std::round(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() * 1e3) / 1e3;
    if (recorded_ == 1) {  // this writer's first row: where the run starts
      if (first_step_ > 0) row["resumed"] = {{"from_step", first_step_}, {"redone", redone_}};
      if (!run_.is_null()) row["run"] = run_;
    }
    if (metrics_) {
      std::fprintf(metrics_, "%s\n", row.dump().c_str());
      std::fflush(metrics_);
    }
    if (!logs_.empty()) {
      const StepScalars scalars = step_scalars(row);
      for (const auto& log : logs_) log->write(scalars);
    }
  }
  if (tty_) {
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(kWidth * done / std::max<std::int64_t>(total_, 1));
    std::string bar(static_cast<std::size_t>(filled), '=');
    if (filled < kWidth) bar += '>' + std::string(static_cast<std::size_t>(kWidth - filled - 1), ' ');
    std::fprintf(stderr, "\r[%s] step %lld/%lld loss %.4f %.0f tok/s %.4f TFLOPS ETA %d:%02d%s", bar.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_), s.loss, tokens_per_s, tflops,
                 static_cast<int>(eta) / 60, static_cast<int>(eta) % 60, s.skipped ? " (skipped)" : "   ");
    std::fflush(stderr);
  } else if (done % log_every_ == 0 || done == total_ || done == 1) {
    std::fprintf(stderr, "step %lld/%lld loss %.4f lr %.3g grad_norm %.3f %.0f tok/s %.4f TFLOPS%s\n",
                 static_cast<long long>(done), static_cast<long long>(total_), s.loss, s.lr, s.grad_norm, tokens_per_s,
                 tflops, s.skipped ? " (skipped: non-finite gradients)" : "");
  }
  if (val_loss)
    std::fprintf(stderr, "%sstep %lld/%lld val_loss %.4f\n", tty_ ? "\n" : "", static_cast<long long>(done), static_cast<long long>(total_),
                 *val_loss);
}

void TrainReport::finish() {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (tty_) std::fprintf(stderr, "\n");
  std::fprintf(stderr, "done: %lld steps in %.1f s, final loss %.4f\n", static_cast<long long>(recorded_), elapsed, last_loss_);
}

}  // namespace tierzero::cli
