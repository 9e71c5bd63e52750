// Reading the ranks' flight dumps back (comm/flight_dumps.h): the JSON of
// flight_dump.cc, parsed with nlohmann-json and checked field by field, so
// that a truncated, corrupt or foreign file is named instead of diagnosed.
#include "comm/flight_dumps.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "comm/flight_keys.h"
#include "core/read_file.h"
#include "tierzero/error.h"
#include "tierzero/topology.h"

namespace tierzero {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool known_collective(const std::string& name) {
  for (int i = 0; i < kNumCollectives; ++i)
    if (collective_name(static_cast<Collective>(i)) == name) return true;
  return false;
}

// A field of the object `o` as T; throws json's type_error or out_of_range when it is missing or of another type.
namespace fk = flight_key;

template <class T>
T field(const json& o, const char* key) {
  return o.at(key).get<T>();
}

FlightDumpRead parse_dump(const json& d) {
  FlightDumpRead out;
  if (field<std::string>(d, fk::kFormat) != fk::kFormatName) throw std::invalid_argument("not a flight dump (format)");
  if (field<int>(d, fk::kVersion) != fk::kVersionNumber)
    throw std::invalid_argument("flight dump version " + std::to_string(field<int>(d, fk::kVersion)) + " (this tierzero reads " +
                                std::to_string(fk::kVersionNumber) + ")");
  out.job = field<std::string>(d, fk::kJob);
  out.world = field<int>(d, fk::kWorldSize);
  out.rank = field<int>(d, fk::kRank);
  out.topology = field<std::string>(d, fk::kTopology);
  out.reason = field<std::string>(d, fk::kReason);
  out.time_ns = field<std::int64_t>(d, fk::kTimeNs);
  const json& a = d.at(fk::kActivity);
  out.activity.what = field<std::string>(a, fk::kWhat);
  out.activity.unit = field<int>(a, fk::kUnit);
  out.activity.step = field<std::int64_t>(a, fk::kStep);
  out.activity.micro = field<int>(a, fk::kMicro);
  out.activity.since_ns = field<std::int64_t>(a, fk::kSinceNs);
  if (d.contains(fk::kLiveness)) {  // minor version 1
    const json& l = d.at(fk::kLiveness);
    out.liveness.tick_ns = field<std::int64_t>(l, fk::kTickNs);
    out.liveness.pause_ns = field<std::int64_t>(l, fk::kPauseNs);
    out.liveness.pause_end_ns = field<std::int64_t>(l, fk::kPauseEndNs);
  }
  for (const json& q : d.at(fk::kQueues)) out.queues[field<int>(q, fk::kId)] = {field<std::uint64_t>(q, fk::kEntered), field<std::uint64_t>(q, fk::kCompleted)};
  for (const json& c : d.at(fk::kCommunicators)) {
    FlightCommRead r;
    r.id = field<int>(c, fk::kId);
    r.name = field<std::string>(c, fk::kName);
    r.level = field<std::string>(c, fk::kLevel);
    r.backend = field<std::string>(c, fk::kBackend);
    r.members = field<std::vector<int>>(c, fk::kMembers);
    r.entered = field<std::uint64_t>(c, fk::kEntered);
    r.completed = field<std::uint64_t>(c, fk::kCompleted);
    if (r.members.empty()) throw std::invalid_argument("communicator " + std::to_string(r.id) + " has no members");
    out.comms.push_back(std::move(r));
  }
  for (const json& x : d.at(fk::kRecords)) {
    FlightRecordRead r;
    r.comm = field<int>(x, fk::kComm);
    r.seq = field<std::uint64_t>(x, fk::kSeq);
    r.op = field<std::string>(x, fk::kOp);
    if (!known_collective(r.op)) throw std::invalid_argument("a record names an unknown collective '" + r.op + "'");
    r.bytes = field<std::uint64_t>(x, fk::kBytes);
    r.dtype = field<std::string>(x, fk::kDtype);
    r.bits = field<int>(x, fk::kBits);
    r.queue = field<int>(x, fk::kQueue);
    r.job = field<std::uint64_t>(x, fk::kJob);
    r.step = field<std::int64_t>(x, fk::kStep);
    r.micro = field<int>(x, fk::kMicro);
    r.phase = field<std::string>(x, fk::kPhase);
    r.unit = field<int>(x, fk::kUnit);
    r.queued_ns = field<std::int64_t>(x, fk::kQueuedNs);
    r.started_ns = field<std::int64_t>(x, fk::kStartedNs);
    r.completed_ns = field<std::int64_t>(x, fk::kCompletedNs);
    out.records.push_back(std::move(r));
  }
  if (out.world < 1 || out.rank < 0 || out.rank >= out.world)
    throw std::invalid_argument("rank " + std::to_string(out.rank) + " of a world of " + std::to_string(out.world));
  return out;
}

// The folder holding the rank files: DIR/flight, or DIR itself.
fs::path flight_folder(const std::string& dir) {
  const fs::path inner = fs::path(dir) / "flight";
  std::error_code ec;
  return fs::is_directory(inner, ec) ? inner : fs::path(dir);
}

}  // namespace

FlightDumps read_flight_dumps(const std::string& dir) {
  FlightDumps out;
  const fs::path folder = flight_folder(dir);
  out.folder = folder.string();
  std::error_code ec;
  TZ_CHECK(fs::is_directory(folder, ec), FormatError, "'" + dir + "' is not a folder (give a save folder or --flight-dir, which holds flight/)");
  std::vector<std::string> names;
  for (const fs::directory_entry& f : fs::directory_iterator(folder, ec)) {
    const std::string name = f.path().filename().string();
    if (name.rfind("rank-", 0) == 0 && f.path().extension() == ".json") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  TZ_CHECK(!names.empty(), FormatError,
           "no flight dumps (rank-R.json) in '" + out.folder + "': the run recorded none (--flight-records 0), or wrote them elsewhere (--flight-dir)");
  std::vector<FlightDumpRead> read;
  for (const std::string& name : names) {
    const std::optional<std::string> text = read_file((folder / name).string());
    try {
      if (!text) throw std::invalid_argument("cannot be read");
      const json d = json::parse(*text);  // throws on truncated or corrupt JSON
      FlightDumpRead dump = parse_dump(d);
      if (name != "rank-" + std::to_string(dump.rank) + ".json")
        throw std::invalid_argument("holds the dump of rank " + std::to_string(dump.rank));
      dump.file = name;
      read.push_back(std::move(dump));
    } catch (const std::exception& e) {
      out.problems.push_back(name + ": unusable (truncated or corrupt): " + e.what());
    }
  }
  // The job: the (job, world size) most dumps name; the newest dump decides a tie.
  std::map<std::pair<std::string, int>, std::pair<int, std::int64_t>> jobs;
  for (const FlightDumpRead& d : read) {
    auto& [count, newest] = jobs[{d.job, d.world}];
    ++count, newest = std::max(newest, d.time_ns);
  }
  TZ_CHECK(!jobs.empty(), FormatError, "no usable flight dump in '" + out.folder + "': " + [&] {
    std::string all;
    for (const std::string& p : out.problems) all += (all.empty() ? "" : "; ") + p;
    return all;
  }());
  const auto job = std::max_element(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
  for (FlightDumpRead& d : read) {
    if (d.job == job.first && d.world == job.second) {
      out.ranks[d.rank] = std::move(d);
      continue;
    }
    out.problems.push_back(d.file + ": a dump of " + (d.job != job.first ? "another job (" + d.job + ")" : "the same job") + " with " +
                           std::to_string(d.world) + " ranks, not of job " + job.first + " with " + std::to_string(job.second) +
                           " ranks like the others: left out");
  }
  return out;
}

}  // namespace tierzero
