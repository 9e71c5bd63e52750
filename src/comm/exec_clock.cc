#include "comm/exec_clock.h"

namespace tierzero {

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

CommSeconds ExecClock::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CommSeconds s = busy_;
  if (running_) s.at(kind_, phase_) += std::chrono::duration<double>(Clock::now() - since_).count();
  return s;
}

}  // namespace tierzero
