#include "sharded/faults.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tierzero {

namespace {
std::atomic<bool> g_io_stalled{false};
}  // namespace

Faults::Faults() {
  // VARIABLE=R:S[:WHERE]; returns WHERE ("" when not given).
  const auto at = [](const char* variable, At& out) {
    const char* v = std::getenv(variable);
    long long step = -1;
    int rank = -1;
    char where[16] = {};
    if (v && std::sscanf(v, "%d:%lld:%15s", &rank, &step, where) >= 2) out = {rank, step};
    return std::string(where);
  };
  const std::string where = at("TIERZERO_FAULT_STALL", stall_);
  if (where == "compute") stall_site_ = StallSite::compute;
  if (where == "io") stall_site_ = StallSite::io;
  at("TIERZERO_FAULT_MISMATCH", mismatch_);
  if (const char* v = std::getenv("TIERZERO_FAULT_KILL_IN_SAVE")) kill_in_save_rank_ = std::atoi(v);
}

bool Faults::stalls(StallSite site, int rank, std::int64_t step) const {
  return stall_.rank == rank && stall_.step == step && stall_site_ == site;
}

bool Faults::mismatches(int rank, std::int64_t step) const { return mismatch_.rank == rank && mismatch_.step == step; }

const Faults& faults() {
  static const Faults f;
  return f;
}

void stall_forever() {
  for (;;) pause();
}

void stall_io_threads() { g_io_stalled.store(true); }

void stall_io_if_asked() {
  if (g_io_stalled.load()) stall_forever();
}

}  // namespace tierzero
