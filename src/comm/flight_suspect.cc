// The suspect of a hang from the dumps' clocks (comm/flight_suspect.h).
// A collective is the same on two ranks when its communicator's number and
// first member and its sequence number agree (as in flight_diagnose.cc).
#include "comm/flight_suspect.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "comm/flight_keys.h"
#include "comm/flight_state.h"
#include "tierzero/error.h"
#include "tierzero/topology.h"

namespace tierzero {

using nlohmann::json;
namespace fk = flight_key;

namespace {

constexpr std::int64_t kPauseNs = FlightRecorder::kPauseNs;  // a process that did not run this long was stopped
constexpr std::int64_t kLateNs = 1'000'000'000;   // a rank this much later into a collective than the last of the others made them wait

double s_of(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

// A collective across ranks: communicator number, its first member, sequence number.
using CollectiveKey = std::tuple<int, int, std::uint64_t>;

class Suspects {
 public:
  explicit Suspects(const FlightDumps& dumps);
  json paused() const;
  json late() const;
  json partition() const;
  json first_to_stop() const;
  bool any_waiting() const { return hang_start_ns_ != std::numeric_limits<std::int64_t>::max(); }

 private:

  const FlightDumps& dumps_;
  std::int64_t hang_start_ns_ = std::numeric_limits<std::int64_t>::max();  // the first start of a collective some rank waits in
  std::map<CollectiveKey, std::map<int, const FlightRecordRead*>> at_;                // each collective's record on each rank
};

Suspects::Suspects(const FlightDumps& dumps) : dumps_(dumps) {
  for (const auto& [rank, d] : dumps.ranks)
    for (const FlightRecordRead& r : d.records) {
      const FlightCommRead* c = d.comm(r.comm);
      if (!c) continue;
      at_[{c->id, c->members.front(), r.seq}][rank] = &r;
      if (!r.done()) hang_start_ns_ = std::min(hang_start_ns_, r.started_ns);
    }
}

// The ranks whose process stood still for kPauseNs or more while the others
// waited (the pause ended after the first wait began; with no wait, any):
// the longest first. A pause still open at the dump ends at the dump.
json Suspects::paused() const {
  json out = json::array();
  for (const auto& [rank, d] : dumps_.ranks) {
    const auto& l = d.liveness;
    if (l.tick_ns == 0) continue;  // an older dump: no ticker
    std::int64_t pause = l.pause_ns, end = l.pause_end_ns;
    if (d.time_ns - l.tick_ns >= pause) pause = d.time_ns - l.tick_ns, end = d.time_ns;  // still paused when it dumped (or since)
    if (pause < kPauseNs || (any_waiting() && end < hang_start_ns_)) continue;
    out.push_back({{"rank", rank}, {"paused_s", s_of(pause)}, {"resumed_s_before_dump", s_of(d.time_ns - end)},
                   {"stopped_s_before_dump", s_of(d.time_ns - end + pause)}});
  }
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) { return a["paused_s"] > b["paused_s"]; });
  if (out.empty()) return nullptr;
  json s = out[0];
  s["how"] = "paused", s["conclusive"] = true, s["paused_ranks"] = out;
  return s;
}

// The first collective (by when the late rank entered it) that some rank
// still waits in and that one rank entered kLateNs or more after every other.
json Suspects::late() const {
  json best = nullptr;
  std::int64_t best_start = std::numeric_limits<std::int64_t>::max();
  for (const auto& [key, ranks] : at_) {
    if (ranks.size() < 2 || std::all_of(ranks.begin(), ranks.end(), [](const auto& x) { return x.second->done(); })) continue;
    std::vector<std::pair<std::int64_t, int>> starts;
    for (const auto& [rank, r] : ranks) starts.push_back({r->started_ns, rank});
    std::sort(starts.begin(), starts.end());
    const auto [last, rank] = starts.back();
    const std::int64_t behind = last - starts[starts.size() - 2].first;
    if (behind < kLateNs || last >= best_start) continue;
    const FlightRecordRead& r = *ranks.at(rank);
    std::vector<int> waited;
    for (const auto& s : starts)
      if (s.second != rank) waited.push_back(s.second);
    best_start = last;
    best = {{"how", "late"},      {"conclusive", true}, {fk::kRank, rank},   {"late_s", s_of(behind)}, {"waited", waited},
            {fk::kComm, std::get<0>(key)}, {fk::kSeq, r.seq}, {fk::kOp, r.op},     {fk::kPhase, r.phase},    {fk::kUnit, r.unit},
            {fk::kStep, r.step},  {fk::kMicro, r.micro},  {fk::kQueue, r.queue}, {fk::kJob, r.job}};
  }
  return best;
}

// Collectives every member entered and some member still waits in: when they
// all cross one level (node or world) between two or more groups of the level
// below it, that level's link failed.
json Suspects::partition() const {
  std::set<std::string> levels;
  std::set<int> members;
  int stuck = 0;
  for (const auto& [key, ranks] : at_) {
    const auto waiting = std::find_if(ranks.begin(), ranks.end(), [](const auto& x) { return !x.second->done(); });
    if (waiting == ranks.end()) continue;
    const FlightCommRead* c = dumps_.ranks.at(waiting->first).comm(waiting->second->comm);
    const std::uint64_t seq = std::get<2>(key);  // a structured binding cannot be captured before C++20's P1091 (clang 14)
    const bool all_entered = std::all_of(c->members.begin(), c->members.end(), [&](int m) {
      if (!dumps_.ranks.count(m)) return false;
      const FlightCommRead* mine = dumps_.ranks.at(m).comm(c->id);
      return mine && mine->members.front() == c->members.front() && mine->entered >= seq;
    });
    if (!all_entered) continue;
    ++stuck, levels.insert(c->level), members.insert(c->members.begin(), c->members.end());
  }
  if (stuck == 0 || levels.size() != 1 || (*levels.begin() != level_name(Level::node) && *levels.begin() != level_name(Level::world))) return nullptr;
  const FlightDumpRead& any = dumps_.ranks.begin()->second;
  const Level level = parse_level(*levels.begin());
  const Level below = level == Level::world ? Level::node : Level::package;
  std::set<std::vector<int>> groups;
  try {
    const Topology t = Topology::parse(any.topology, any.world);
    for (int m : members) groups.insert(t.group(below, m));
  } catch (const Error&) {
    return nullptr;  // a topology this tierzero cannot read: no groups to name
  }
  if (groups.size() < 2) return nullptr;
  return {{"how", "partition"}, {"conclusive", true}, {"level", *levels.begin()}, {"groups_level", std::string(level_name(below))},
          {"groups", std::vector<std::vector<int>>(groups.begin(), groups.end())}, {"collectives", stuck}};
}

// The rank whose last sign of progress is the oldest, and by how much it is older than the next one's.
json Suspects::first_to_stop() const {
  if (!any_waiting() || dumps_.ranks.size() < 2) return nullptr;
  std::vector<std::tuple<std::int64_t, int, double>> last;  // time, rank, seconds before its dump
  for (const auto& [rank, d] : dumps_.ranks) {
    std::int64_t t = d.activity.since_ns;
    for (const FlightRecordRead& r : d.records) t = std::max({t, r.started_ns, r.completed_ns});
    last.push_back({t, rank, s_of(d.time_ns - t)});
  }
  std::sort(last.begin(), last.end());
  const auto& [t, rank, before] = last[0];
  return {{"how", "first_to_stop"},         {"conclusive", false}, {"rank", rank}, {"last_progress_s_before_dump", before},
          {"ahead_s", s_of(std::get<0>(last[1]) - t)}};
}

}  // namespace

json flight_suspect(const FlightDumps& dumps, bool missing_known) {
  const Suspects s(dumps);
  for (json j : {s.paused(), s.late(), s.partition()})
    if (!j.is_null()) return j;
  return missing_known ? json(nullptr) : s.first_to_stop();
}

}  // namespace tierzero
