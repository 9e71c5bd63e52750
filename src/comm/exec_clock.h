// Where a rank's communication executor (comm/comm_schedule.h) spends its
// time, for the step breakdown (tierzero/sharded_trainer.h): seconds per
// job kind (a parameter gather, a gradient reduction, a control value) and
// phase (a collective on one level's links, quantisation, or local work:
// conversions, copies, memory fences); idle time is not counted.
//
// WaitMeter is the other side: a thread that blocks on its schedules times
// the wait and takes the executors' time per kind and phase over it, so a
// wait is split by what the executors were doing meanwhile (e.g. a backward
// gather that waited while one executor ran reductions queued before it).
//
// Threading: begin/enter/end from the executor thread only; snapshot() from
// any thread (a mutex). WaitMeter: one thread.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <vector>

#include "tierzero/communicator.h"
#include "tierzero/topology.h"

namespace tierzero {

enum class CommKind : std::uint8_t { gather = 0, reduce = 1, control = 2 };
inline constexpr int kNumCommKinds = 3;

// local, quant, then one phase per level (Level's values + 2).
enum class CommPhase : std::uint8_t { local = 0, quant = 1 };
inline constexpr int kNumCommPhases = 2 + kNumLevels;
inline int phase_index(CommPhase p) { return static_cast<int>(p); }
inline int phase_index(Level l) { return 2 + static_cast<int>(l); }
// The phase of a collective over comm: the outermost level that separates
// two of its members (local for a communicator of one).
int collective_phase(const Communicator& comm);

// Seconds per kind and phase.
struct CommSeconds {
  std::array<std::array<double, kNumCommPhases>, kNumCommKinds> s{};
  double& at(CommKind k, int phase) { return s[static_cast<int>(k)][phase]; }
  double at(CommKind k, int phase) const { return s[static_cast<int>(k)][phase]; }
  double kind_total(CommKind k) const;
  CommSeconds& operator+=(const CommSeconds& o);
  CommSeconds operator-(const CommSeconds& o) const;
};

class ExecClock {
 public:
  // A job of `kind` starts, in its local phase.
  void begin(CommKind kind);
  // The running job moves to `phase` (phase_index of a CommPhase or a Level).
  void enter(int phase);
  void end();
  // Busy seconds so far, the running phase included up to now.
  CommSeconds snapshot() const;

 private:
  using Clock = std::chrono::steady_clock;
  void close(Clock::time_point now);  // adds the running phase's time (mutex held)
  mutable std::mutex mutex_;
  CommSeconds busy_;
  bool running_ = false;
  CommKind kind_ = CommKind::control;
  int phase_ = 0;
  Clock::time_point since_;
};

// What one thread's waits on the schedule cost, by what it waited for.
class WaitMeter {
 public:
  // tensor: a tensor-parallel group's collective, which the training thread calls and waits for itself.
  enum class Wait : std::uint8_t { gather = 0, reduce = 1, control = 2, tensor = 3 };
  static constexpr int kNumWaits = 4;
  struct Totals {
    std::array<double, kNumWaits> blocked{};           // seconds blocked, per wait kind
    std::array<CommSeconds, kNumWaits> executor{};     // the executor's busy time during those waits
  };
  // The executors' clocks (each must outlive the meter; one may be given twice: it counts once).
  explicit WaitMeter(std::vector<const ExecClock*> clocks);
  // Runs `wait` and charges its time to `what`.
  template <class F>
  void measure(Wait what, F&& wait) {
    const CommSeconds before = snapshot();
    const auto t0 = std::chrono::steady_clock::now();
    wait();
    totals_.blocked[static_cast<int>(what)] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    totals_.executor[static_cast<int>(what)] += snapshot() - before;
  }
  // The executors' busy time so far, summed.
  CommSeconds snapshot() const;
  // r.wait(), measured.
  void wait(Wait what, Request& r) {
    measure(what, [&] { r.wait(); });
  }
  const Totals& totals() const { return totals_; }
  double blocked_total() const { return std::accumulate(totals_.blocked.begin(), totals_.blocked.end(), 0.0); }
  void reset() { totals_ = {}; }

 private:
  std::vector<const ExecClock*> clocks_;
  Totals totals_;
};

}  // namespace tierzero
