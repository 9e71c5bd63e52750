// The flight recorder: what every collective of this rank was, and what
// the rank was doing, kept so that a hung or failed job can say where it
// stopped (docs/formats.md, "Flight recorder"; tierzero/flight_diagnose.h
// reads the dumps of all ranks together).
//
// What it keeps, per rank (one process):
//   - a ring of the last N collective records: the communicator (its
//     number in the rank's table of communicators, created in the same
//     order on every rank), the collective's sequence number on it, the
//     collective, bytes and dtype, the bits of a quantised hop, the
//     schedule queue and job that issued it, the step, micro-batch, phase
//     and unit the engine tagged it with (FlightPhaseScope), and the times
//     it was queued, started (posted to the backend) and completed;
//   - per communicator: its name ("world", "hop(node)", "group(node)",
//     "cross(package)"), level, backend, members and the last sequence
//     number entered and completed; per schedule queue the jobs started
//     and finished;
//   - the rank's last non-collective activity (FlightActivity, with its
//     unit, step and start time).
// Every backend records through Communicator's flight hooks, so MPI, NCCL
// and the world of one record the same fields.
//
// Cost: recording is lock-free for the threads that record. A record is
// one atomic increment of the ring index, a few relaxed stores under a
// per-record stamp (a reader sees the old record or the complete new one,
// never a mix) and a clock read at queueing, start and completion; an
// activity is a handful of stores under its own stamp. Nothing is
// allocated after start_flight_recorder. With the recorder off (0
// records, or never started) each hook is one relaxed load.
//
// Dumps: flight_dump() writes DIR/flight/rank-R.json (a temporary file
// renamed over it) using only async-signal-safe calls (open, write,
// rename, clock_gettime) into a fixed buffer, so it may run in a signal
// handler, on any thread, while other threads record. One dump runs at a
// time per process (a second one at the same moment is skipped). A dump
// for a failure (a collective timed out, a fatal signal, an error) is
// kept: later dumps of this process do not replace it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tierzero/communicator.h"

namespace tierzero {

// What a collective was for (the engine tags the collectives it queues):
// optimizer_step is the step's end (loss and gradient norm, parameters
// rebuilt after the update, the step boundary's control values); tensor a
// tensor-parallel group's collective, which the model issues inside a
// unit's forward or backward (tagged with that unit).
enum class FlightPhase : std::uint8_t { none, forward_gather, backward_gather, reduction, optimizer_step, checkpoint, evaluation, tensor };
// What the rank itself was doing outside collectives.
enum class FlightActivity : std::uint8_t { none, data_load, forward, backward, optimizer, checkpoint_write, offload_io, evaluation };
std::string_view flight_phase_name(FlightPhase p);
std::string_view flight_activity_name(FlightActivity a);

struct FlightOptions {
  std::size_t records = 4096;  // the ring's length; 0 turns the recorder off
  std::string dir;             // dumps go to DIR/flight/rank-R.json; "" for none
};

// Collective over `world` (every rank calls it at the same point, before
// the collectives it should record): rank 0 names the job (an id that
// every rank's dump carries) and removes the dumps an earlier job left in
// DIR/flight, and broadcasts the id; then each rank allocates its ring and
// starts recording. Throws ConfigError when DIR/flight cannot be created.
// Call while no collective is in flight on this rank.
void start_flight_recorder(Communicator& world, const FlightOptions& options);
// Whether this rank records (started with records > 0).
bool flight_recording();
// DIR/flight/rank-R.json, or "" when dumps go nowhere.
std::string flight_dump_path();

// The step (its number: 1 for the first) and micro-batch the calling thread
// works on; its later collectives, and the jobs it queues, carry them.
void flight_step(std::int64_t step, int micro);

// The phase and unit of the collectives the calling thread issues or
// queues while this lives (the previous ones afterwards). One thread.
class FlightPhaseScope {
 public:
  explicit FlightPhaseScope(FlightPhase phase, int unit = -1);
  ~FlightPhaseScope();
  FlightPhaseScope(const FlightPhaseScope&) = delete;
  FlightPhaseScope& operator=(const FlightPhaseScope&) = delete;

 private:
  FlightPhase phase_;
  int unit_;
};

// Records that the rank now does `what` (on `unit`, -1 for none), from
// now. Call from the training thread only (one writer).
void flight_activity(FlightActivity what, int unit = -1);
// The unit of the rank's current activity (the last flight_activity's or
// FlightActivityScope's; -1 for none, and while the recorder is off).
int flight_activity_unit();

// An activity for as long as this lives, then the one before it again
// (with its own start time): e.g. waiting for offload I/O inside a
// unit's forward. Training thread only.
class FlightActivityScope {
 public:
  explicit FlightActivityScope(FlightActivity what, int unit = -1);
  ~FlightActivityScope();
  FlightActivityScope(const FlightActivityScope&) = delete;
  FlightActivityScope& operator=(const FlightActivityScope&) = delete;

 private:
  std::uint64_t saved_[4];  // the activity replaced
};

// Why a dump is written: on request (SIGUSR2), at a stop (a stop notice,
// a preemption), or for a failure (kept; see above).
enum class FlightDumpKind : std::uint8_t { request, stop, failure };

// Writes this rank's dump with `reason` (a short word such as "SIGUSR2" or
// "comm-timeout"; copied as it is into the JSON, so plain ASCII without
// quotes). Async-signal-safe. Returns whether a dump was written: false
// when the recorder is off, dumps go nowhere, another dump is being
// written, a failure dump exists already, or the file could not be
// written.
bool flight_dump(const char* reason, FlightDumpKind kind) noexcept;

}  // namespace tierzero
