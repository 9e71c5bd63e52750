// The JSON keys of a flight dump (docs/formats.md, "Flight recorder"),
// spelled once for its writer (flight_dump.cc), its reader
// (flight_dumps.cc) and tierzero diagnose, which re-emits records and
// communicators in its verdict (flight_diagnose.cc). A communicator's level
// is a level name of tierzero/topology.h, or "self". Internal.
#pragma once

namespace tierzero::flight_key {

// The dump
inline constexpr const char kFormat[] = "format";
inline constexpr const char kVersion[] = "version";
inline constexpr const char kMinor[] = "minor";
inline constexpr const char kJob[] = "job";  // the dump's: the job's id; a record's: its queue's job number
inline constexpr const char kWorldSize[] = "world_size";
inline constexpr const char kRank[] = "rank";
inline constexpr const char kTopology[] = "topology";
inline constexpr const char kReason[] = "reason";
inline constexpr const char kKind[] = "kind";
inline constexpr const char kTimeNs[] = "time_ns";
inline constexpr const char kRecordsKept[] = "records_kept";
inline constexpr const char kRecordsTotal[] = "records_total";
// The rank's activity (and a record's tag: unit, step, micro)
inline constexpr const char kActivity[] = "activity";
inline constexpr const char kWhat[] = "what";
inline constexpr const char kUnit[] = "unit";
inline constexpr const char kStep[] = "step";
inline constexpr const char kMicro[] = "micro";
inline constexpr const char kSinceNs[] = "since_ns";
// The liveness ticker's
inline constexpr const char kLiveness[] = "liveness";
inline constexpr const char kTickIntervalNs[] = "tick_interval_ns";
inline constexpr const char kTickNs[] = "tick_ns";
inline constexpr const char kPauseNs[] = "pause_ns";
inline constexpr const char kPauseEndNs[] = "pause_end_ns";
// The queues' and communicators' tables
inline constexpr const char kQueues[] = "queues";
inline constexpr const char kCommunicators[] = "communicators";
inline constexpr const char kId[] = "id";
inline constexpr const char kEntered[] = "entered";
inline constexpr const char kCompleted[] = "completed";
inline constexpr const char kName[] = "name";
inline constexpr const char kLevel[] = "level";
inline constexpr const char kBackend[] = "backend";
inline constexpr const char kMembers[] = "members";
// A record
inline constexpr const char kRecords[] = "records";
inline constexpr const char kComm[] = "comm";
inline constexpr const char kSeq[] = "seq";
inline constexpr const char kOp[] = "op";
inline constexpr const char kBytes[] = "bytes";
inline constexpr const char kDtype[] = "dtype";
inline constexpr const char kBits[] = "bits";
inline constexpr const char kQueue[] = "queue";
inline constexpr const char kPhase[] = "phase";
inline constexpr const char kQueuedNs[] = "queued_ns";
inline constexpr const char kStartedNs[] = "started_ns";
inline constexpr const char kCompletedNs[] = "completed_ns";

// Values: the dump's format and version, and the name and level of a
// communicator of one rank.
inline constexpr const char kFormatName[] = "tierzero-flight";
inline constexpr int kVersionNumber = 1, kMinorNumber = 1;
inline constexpr const char kSelf[] = "self";

// The keys of a record that tierzero diagnose re-emits as they were
// written (it leaves out the times, which it gives relative to the dump).
inline constexpr const char* kReemittedRecordKeys[] = {kComm, kSeq, kOp, kBytes, kDtype, kBits, kQueue, kJob, kStep, kMicro, kPhase, kUnit};

}  // namespace tierzero::flight_key
