// The flight recorder's state (tierzero/flight_recorder.h), shared by the
// recording side (flight_recorder.cc) and the dump (flight_dump.cc), and
// the per-thread context through which the schedule (comm_schedule.cc) and
// the quantised algorithms (hier/) tell the backends what a collective is
// for. Internal.
//
// Concurrency: a record slot, the activity and each counter are written
// by one thread at a time and read by any thread or a signal handler. A
// slot is a seqlock: its stamp is 2t+1 while record t is written and 2t+2
// once it is; its fields are relaxed atomics, so a reader that sees the
// same even stamp before and after copying them has a whole record. A
// record overwritten (the ring wrapped) before its collective completed
// loses that completion (the communicator's counters keep it).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "tierzero/flight_recorder.h"

namespace tierzero {

// What a queued job carries from the thread that queued it.
struct FlightTag {
  std::int64_t step = -1;
  std::int32_t micro = -1;
  std::int32_t unit = -1;
  FlightPhase phase = FlightPhase::none;
};

// The calling thread's: its tag; while an executor runs a job, the job's
// queue, number, queueing time and tag; the bits of the hop a quantised
// algorithm is exchanging (16: none).
struct FlightContext {
  FlightTag tag;
  std::int64_t queued_ns = 0;  // 0: not in a job (a collective called directly)
  std::int32_t queue = -1;
  std::uint64_t job = 0;
  std::int32_t bits = 16;
};
FlightContext& flight_context();  // thread_local
// CLOCK_REALTIME in nanoseconds (async-signal-safe): comparable across ranks.
std::int64_t flight_now_ns() noexcept;

// A record's fields as plain values.
struct FlightEntry {
  std::int64_t comm = -1;
  std::int64_t seq = 0, bytes = 0, job = 0, step = -1, queued_ns = 0, started_ns = 0, completed_ns = 0;
  std::int32_t queue = -1, micro = -1, unit = -1, bits = 16;
  Collective op = Collective::barrier;
  DType dtype = DType::u8;
  FlightPhase phase = FlightPhase::none;
};

class FlightSlot {
 public:
  // Record `ticket` (single writer per slot while the ring does not wrap).
  void write(std::uint64_t ticket, const FlightEntry& e) noexcept;
  // The completion of record `ticket`, if the slot still holds it.
  void complete(std::uint64_t ticket, std::int64_t ns) noexcept;
  // A whole record and its ticket; false when the slot is empty or being written.
  bool read(std::uint64_t& ticket, FlightEntry& e) const noexcept;

 private:
  enum Field { kComm, kSeq, kBytes, kJob, kStep, kQueued, kStarted, kCompleted, kPacked, kNumFields };
  std::atomic<std::uint64_t> stamp_{0};
  std::atomic<std::int64_t> f_[kNumFields]{};
  std::atomic<std::int32_t> unit_{0};
};

// A communicator's place in the table: fixed once published, but for the counters.
struct FlightComm {
  int id = -1;
  char name[24] = {};
  const char* level = "";
  const char* backend = "";
  std::unique_ptr<int[]> members;
  int size = 0;
  std::atomic<std::uint64_t> entered{0}, completed{0};  // the last sequence number entered / completed
};

struct FlightQueue {
  std::atomic<std::uint64_t> entered{0}, completed{0};  // jobs started / finished
};

// The activity, under a stamp like a record's: what, unit, step, micro, since.
class FlightActivityState {
 public:
  void write(const std::uint64_t (&v)[4]) noexcept;
  void read(std::uint64_t (&v)[4]) const noexcept;  // retries until whole

 private:
  std::atomic<std::uint64_t> stamp_{0};
  std::atomic<std::uint64_t> v_[4]{};
};

struct FlightRecorder {
  static constexpr int kMaxComms = 512, kMaxQueues = 32;
  static constexpr std::size_t kPathMax = 1024;
  std::atomic<bool> on{false};
  std::atomic<FlightSlot*> ring{nullptr};
  std::atomic<std::uint64_t> capacity{0};
  std::atomic<std::uint64_t> next{0};  // tickets handed out
  std::mutex registering;              // communicators and queues are added under it
  FlightComm comms[kMaxComms];
  std::atomic<int> num_comms{0};
  FlightQueue queues[kMaxQueues];
  std::atomic<int> num_queues{0};
  FlightActivityState activity;
  // Set by start_flight_recorder (while recording is off), read by dumps.
  char path[kPathMax] = {}, tmp_path[kPathMax] = {};
  char job[40] = {}, topology[96] = {};
  int rank = 0, world = 1;
  std::atomic<bool> dumping{false}, failure_dumped{false};
  // The liveness ticker (flight_recorder.cc): a thread that reads the clock
  // every kTickNs. Its last reading, and the latest gap between two readings
  // of at least kPauseNs (the process did not run: SIGSTOP, a debugger, a
  // frozen host) with the time it ended. The ticker writes, dumps read.
  static constexpr std::int64_t kTickNs = 100'000'000, kPauseNs = 1'000'000'000;
  std::atomic<std::int64_t> tick_ns{0}, pause_ns{0}, pause_end_ns{0};
};
FlightRecorder& flight_recorder();  // the process's; never destroyed

// A new queue's number (CommSchedule: one per schedule, in creation order).
int flight_open_queue();
// The executor of `queue` starts / finishes job `job`.
void flight_job_started(int queue, std::uint64_t job) noexcept;
void flight_job_finished(int queue, std::uint64_t job) noexcept;

// The executor's context for one job while this lives.
class FlightJobScope {
 public:
  FlightJobScope(const FlightTag& tag, std::int64_t queued_ns, int queue, std::uint64_t job);
  ~FlightJobScope();
  FlightJobScope(const FlightJobScope&) = delete;
  FlightJobScope& operator=(const FlightJobScope&) = delete;

 private:
  FlightContext saved_;
};

// The bits of the quantised hop the calling thread exchanges while this lives.
class FlightBitsScope {
 public:
  explicit FlightBitsScope(int bits) : saved_(flight_context().bits) { flight_context().bits = bits; }
  ~FlightBitsScope() { flight_context().bits = saved_; }
  FlightBitsScope(const FlightBitsScope&) = delete;
  FlightBitsScope& operator=(const FlightBitsScope&) = delete;

 private:
  int saved_;
};

}  // namespace tierzero
