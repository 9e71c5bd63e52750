#include "comm/exec_clock.h"

#include <algorithm>
#include <utility>

namespace tierzero {

int collective_phase(const Communicator& comm) {
  if (comm.size() == 1) return phase_index(CommPhase::local);
  Level widest = Level::package;
  for (int i = 1; i < comm.size(); ++i)
    widest = std::max(widest, comm.topology().separating_level(comm.world_rank(0), comm.world_rank(i)));
  return phase_index(widest);
}

double CommSeconds::kind_total(CommKind k) const {
  double t = 0;
  for (double v : s[static_cast<int>(k)]) t += v;
  return t;
}

CommSeconds& CommSeconds::operator+=(const CommSeconds& o) {
  for (int k = 0; k < kNumCommKinds; ++k)
    for (int p = 0; p < kNumCommPhases; ++p) s[k][p] += o.s[k][p];
  return *this;
}

CommSeconds CommSeconds::operator-(const CommSeconds& o) const {
  CommSeconds d;
  for (int k = 0; k < kNumCommKinds; ++k)
    for (int p = 0; p < kNumCommPhases; ++p) d.s[k][p] = s[k][p] - o.s[k][p];
  return d;
}

void ExecClock::close(Clock::time_point now) {
  if (running_) busy_.at(kind_, phase_) += std::chrono::duration<double>(now - since_).count();
  since_ = now;
}

void ExecClock::begin(CommKind kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  close(Clock::now());
  running_ = true, kind_ = kind, phase_ = phase_index(CommPhase::local);
}

void ExecClock::enter(int phase) {
  std::lock_guard<std::mutex> lock(mutex_);
  close(Clock::now());
  phase_ = phase;
}

void ExecClock::end() {
  std::lock_guard<std::mutex> lock(mutex_);
  close(Clock::now());
  running_ = false;
}

WaitMeter::WaitMeter(std::vector<const ExecClock*> clocks) : clocks_(std::move(clocks)) {
  std::sort(clocks_.begin(), clocks_.end());
  clocks_.erase(std::unique(clocks_.begin(), clocks_.end()), clocks_.end());
}

CommSeconds WaitMeter::snapshot() const {
  CommSeconds s;
  for (const ExecClock* c : clocks_) s += c->snapshot();
  return s;
}

CommSeconds ExecClock::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CommSeconds s = busy_;
  if (running_) s.at(kind_, phase_) += std::chrono::duration<double>(Clock::now() - since_).count();
  return s;
}

}  // namespace tierzero
