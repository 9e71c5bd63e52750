// The ranks' flight dumps as read back by tierzero diagnose
// (tierzero/flight_diagnose.h): parsed and checked (flight_dumps.cc), then
// analysed (flight_diagnose.cc). Internal.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tierzero {

struct FlightRecordRead {
  int comm = -1;
  std::uint64_t seq = 0, bytes = 0, job = 0;
  std::string op, dtype, phase;
  int bits = 16, queue = -1, micro = -1, unit = -1;
  std::int64_t step = -1, queued_ns = 0, started_ns = 0, completed_ns = 0;
  bool done() const { return completed_ns != 0; }
};

struct FlightCommRead {
  int id = -1;
  std::string name, level, backend;
  std::vector<int> members;
  std::uint64_t entered = 0, completed = 0;
};

struct FlightDumpRead {
  std::string file;  // its name in the folder
  std::string job, topology, reason;
  int world = 0, rank = -1;
  std::int64_t time_ns = 0;
  struct {
    std::string what;
    int unit = -1, micro = -1;
    std::int64_t step = -1, since_ns = 0;
  } activity;
  // The liveness ticker's (minor version 1; all 0 in an older dump): its
  // last reading, and the latest pause of the process with its end.
  struct {
    std::int64_t tick_ns = 0, pause_ns = 0, pause_end_ns = 0;
  } liveness;
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> queues;  // id -> jobs entered, completed
  std::vector<FlightCommRead> comms;
  std::vector<FlightRecordRead> records;  // oldest first
  // Its communicator numbered `id`, or null when it has none.
  const FlightCommRead* comm(int id) const {
    for (const FlightCommRead& c : comms)
      if (c.id == id) return &c;
    return nullptr;
  }
};

// The dumps of one job, by rank, and the files that could not be used.
struct FlightDumps {
  std::map<int, FlightDumpRead> ranks;
  std::vector<std::string> problems;
  std::string folder;  // where they were read
};

// Reads DIR/flight/rank-*.json (or DIR/rank-*.json): every file that parses
// as a dump is kept when it belongs to the job most files belong to (the
// newest on a tie), the others become problems. Throws FormatError when no
// usable dump is left.
FlightDumps read_flight_dumps(const std::string& dir);

}  // namespace tierzero
