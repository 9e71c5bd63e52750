// tierzero diagnose's analysis (tierzero/flight_diagnose.h): the dumps
// (comm/flight_dumps.h) merged into one JSON object, from which the text
// is written, so that both say the same.
//
// A communicator is the same on two ranks when its number (creation order,
// alike on every rank) and its first member agree; a collective is a
// communicator's sequence number. A job of a schedule queue is the same on
// every rank by its number (every rank queues the same jobs in the same
// order), whichever group each rank's job spans.
#include "tierzero/flight_diagnose.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "comm/flight_dumps.h"
#include "comm/flight_keys.h"
#include "comm/flight_suspect.h"
#include "tierzero/communicator.h"

namespace tierzero {

using nlohmann::json;
namespace fk = flight_key;

namespace {

struct CommKey {
  int id, first;
  bool operator<(const CommKey& o) const { return std::tie(id, first) < std::tie(o.id, o.first); }
};
CommKey key_of(const FlightCommRead& c) { return {c.id, c.members.front()}; }

// "rank 5", "ranks 0-4,6,7".
std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(ranks[i]) + (j > i + 1 ? "-" + std::to_string(ranks[j]) : j == i + 1 ? "," + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + s;
}

std::string seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f s", s);
  return b;
}

double before_dump(const FlightDumpRead& d, std::int64_t ns) { return static_cast<double>(d.time_ns - ns) / 1e9; }

// The dumps' evidence lined up (borrows the dumps); result() is the whole diagnosis as JSON.
class Analysis {
 public:
  explicit Analysis(const FlightDumps& dumps);
  json result() const;

 private:
  json record(const FlightDumpRead& d, const FlightRecordRead& r) const;
  json rank_state(const FlightDumpRead& d) const;
  json mismatches() const;
  json first_missing() const;
  json communicators() const;
  std::vector<const FlightRecordRead*> in_flight(const FlightDumpRead& d, int queue = -2) const;

  const FlightDumps& dumps_;
  int world_ = 0;
  std::vector<int> dead_;
  struct Group {
    const FlightCommRead* info = nullptr;
    std::map<int, const FlightCommRead*> ranks;  // each member's view (entered, completed)
  };
  std::map<CommKey, Group> groups_;
  std::map<std::pair<CommKey, std::uint64_t>, std::map<int, const FlightRecordRead*>> at_;  // a collective's record on each rank
};

Analysis::Analysis(const FlightDumps& dumps) : dumps_(dumps), world_(dumps.ranks.begin()->second.world) {
  for (int r = 0; r < world_; ++r)
    if (!dumps.ranks.count(r)) dead_.push_back(r);
  for (const auto& [rank, d] : dumps.ranks) {
    for (const FlightCommRead& c : d.comms) {
      Group& g = groups_[key_of(c)];
      if (!g.info) g.info = &c;
      g.ranks[rank] = &c;
    }
    for (const FlightRecordRead& r : d.records)
      if (const FlightCommRead* c = d.comm(r.comm)) at_[{key_of(*c), r.seq}][rank] = &r;
  }
}

// This rank's records not yet completed (of one queue, or any: -2), oldest first.
std::vector<const FlightRecordRead*> Analysis::in_flight(const FlightDumpRead& d, int queue) const {
  std::vector<const FlightRecordRead*> out;
  for (const FlightRecordRead& r : d.records)
    if (!r.done() && (queue == -2 || r.queue == queue)) out.push_back(&r);
  return out;
}

json Analysis::record(const FlightDumpRead& d, const FlightRecordRead& r) const {
  json j = {{fk::kComm, r.comm},   {fk::kSeq, r.seq},   {fk::kOp, r.op},       {fk::kBytes, r.bytes}, {fk::kDtype, r.dtype}, {fk::kBits, r.bits},
            {fk::kQueue, r.queue}, {fk::kJob, r.job},   {fk::kStep, r.step},   {fk::kMicro, r.micro}, {fk::kPhase, r.phase}, {fk::kUnit, r.unit},
            {"completed", r.done()}, {"started_s_before_dump", before_dump(d, r.started_ns)}};
  if (r.done()) j["completed_s_before_dump"] = before_dump(d, r.completed_ns);
  if (const FlightCommRead* c = d.comm(r.comm)) j[fk::kName] = c->name, j[fk::kLevel] = c->level, j[fk::kMembers] = c->members;
  return j;
}

json Analysis::rank_state(const FlightDumpRead& d) const {
  json j = {{fk::kRank, d.rank}, {fk::kReason, d.reason}};
  j[fk::kActivity] = {{fk::kWhat, d.activity.what}, {fk::kUnit, d.activity.unit}, {fk::kStep, d.activity.step}, {fk::kMicro, d.activity.micro},
                   {"for_s", d.activity.since_ns ? before_dump(d, d.activity.since_ns) : 0.0}};
  j["waiting_in"] = json::array();
  for (const FlightRecordRead* r : in_flight(d)) j["waiting_in"].push_back(record(d, *r));
  const FlightRecordRead* last = nullptr;
  for (const FlightRecordRead& r : d.records)
    if (r.done() && (!last || r.completed_ns > last->completed_ns)) last = &r;
  j["last_completed"] = last ? record(d, *last) : json(nullptr);
  return j;
}

// Collectives whose kind, bytes or dtype differ between ranks at one sequence number.
json Analysis::mismatches() const {
  json out = json::array();
  for (const auto& [where, ranks] : at_) {
    std::map<std::tuple<std::string, std::uint64_t, std::string>, std::vector<int>> sides;
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    for (const auto& [rank, r] : ranks) sides[{r->op, r->bytes, r->dtype}].push_back(rank), first = std::min(first, r->started_ns);
    if (sides.size() < 2) continue;
    const FlightCommRead& c = *groups_.at(where.first).info;
    json m = {{fk::kComm, c.id}, {fk::kName, c.name}, {fk::kLevel, c.level}, {fk::kMembers, c.members}, {fk::kSeq, where.second}, {fk::kStartedNs, first}};
    m["sides"] = json::array();
    for (const auto& [what, who] : sides)
      m["sides"].push_back({{"ranks", who}, {fk::kOp, std::get<0>(what)}, {fk::kBytes, std::get<1>(what)}, {fk::kDtype, std::get<2>(what)}});
    std::stable_sort(m["sides"].begin(), m["sides"].end(), [](const json& a, const json& b) { return a["ranks"].size() > b["ranks"].size(); });
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) { return a[fk::kStartedNs] < b[fk::kStartedNs]; });
  return out;
}

// The first job (or, when every rank entered the same jobs, collective) that
// some ranks entered and others did not, among those some rank waits in.
json Analysis::first_missing() const {
  struct Candidate {
    std::int64_t time = std::numeric_limits<std::int64_t>::max();
    json what;
    std::vector<int> entered, missing;
    std::map<int, std::vector<const FlightRecordRead*>> waiting;  // entered ranks' records in flight there
  };
  std::vector<Candidate> jobs, collectives;
  std::set<int> queues;
  for (const auto& [rank, d] : dumps_.ranks)
    for (const auto& [q, counts] : d.queues) queues.insert(q);
  for (int q : queues) {
    std::uint64_t lo = std::numeric_limits<std::uint64_t>::max(), hi = 0;
    for (const auto& [rank, d] : dumps_.ranks) {
      const std::uint64_t e = d.queues.count(q) ? d.queues.at(q).first : 0;
      lo = std::min(lo, e), hi = std::max(hi, e);
    }
    if (hi == lo) continue;
    Candidate c;
    const FlightRecordRead* first = nullptr;
    for (const auto& [rank, d] : dumps_.ranks) {
      const std::uint64_t e = d.queues.count(q) ? d.queues.at(q).first : 0;
      (e > lo ? c.entered : c.missing).push_back(rank);
      if (e <= lo) continue;
      for (const FlightRecordRead* r : in_flight(d, q)) c.waiting[rank].push_back(r), c.time = std::min(c.time, r->started_ns);
      for (const FlightRecordRead& r : d.records)
        if (r.queue == q && r.job == lo && (!first || r.started_ns < first->started_ns)) first = &r;
    }
    if (c.waiting.empty()) continue;  // the ranks ahead wait for nothing: the others are only behind
    c.missing.insert(c.missing.end(), dead_.begin(), dead_.end());  // whether a dead rank entered it, nothing says
    std::sort(c.missing.begin(), c.missing.end());
    c.what = {{"kind", "job"}, {fk::kQueue, q}, {fk::kJob, lo}};
    if (first) {
      std::set<std::string> ops;
      std::vector<std::string> levels;
      for (const auto& [rank, d] : dumps_.ranks)
        for (const FlightRecordRead& r : d.records)
          if (r.queue == q && r.job == lo) {
            ops.insert(r.op);
            if (const FlightCommRead* cm = d.comm(r.comm); cm && std::find(levels.begin(), levels.end(), cm->level) == levels.end())
              levels.push_back(cm->level);
          }
      const auto order = [](const std::string& l) {
        for (Level x : kAllLevels)
          if (l == level_name(x)) return static_cast<int>(x);
        return kNumLevels;  // self
      };
      std::sort(levels.begin(), levels.end(), [&](const std::string& a, const std::string& b) { return order(a) < order(b); });
      c.what.update({{fk::kPhase, first->phase}, {fk::kUnit, first->unit}, {fk::kStep, first->step}, {fk::kMicro, first->micro}, {fk::kBits, first->bits},
                     {"ops", ops}, {"levels", levels}});
    }
    jobs.push_back(std::move(c));
  }
  for (const auto& [key, g] : groups_) {
    std::uint64_t lo = std::numeric_limits<std::uint64_t>::max(), hi = 0;
    for (const auto& [rank, c] : g.ranks) lo = std::min(lo, c->entered), hi = std::max(hi, c->entered);
    std::vector<int> dead_members;
    for (int m : g.info->members)
      if (std::binary_search(dead_.begin(), dead_.end(), m)) dead_members.push_back(m);
    if (hi == lo && dead_members.empty()) continue;
    const std::uint64_t seq = hi > lo ? lo + 1 : hi;
    Candidate c;
    for (const auto& [rank, cm] : g.ranks) {
      (cm->entered >= seq ? c.entered : c.missing).push_back(rank);
      if (cm->entered < seq) continue;
      const auto here = at_.find({key, seq});
      if (here == at_.end() || !here->second.count(rank) || here->second.at(rank)->done()) continue;
      c.waiting[rank].push_back(here->second.at(rank)), c.time = std::min(c.time, here->second.at(rank)->started_ns);
    }
    c.missing.insert(c.missing.end(), dead_members.begin(), dead_members.end());
    std::sort(c.missing.begin(), c.missing.end());
    if (c.waiting.empty() || c.missing.empty()) continue;
    const FlightRecordRead& r = *c.waiting.begin()->second.front();
    c.what = {{"kind", "collective"}, {fk::kComm, g.info->id}, {fk::kName, g.info->name}, {fk::kLevel, g.info->level},
              {fk::kMembers, g.info->members}, {fk::kSeq, seq},       {fk::kOp, r.op},         {fk::kBytes, r.bytes},
              {fk::kDtype, r.dtype},        {fk::kPhase, r.phase},     {fk::kUnit, r.unit},     {fk::kStep, r.step},
              {fk::kMicro, r.micro},        {fk::kBits, r.bits}};
    collectives.push_back(std::move(c));
  }
  // A collective that some job-level candidate's waiting ranks wait in is that job, seen from one communicator.
  std::vector<Candidate> pick = std::move(jobs);
  for (Candidate& c : collectives) {
    const FlightRecordRead& r = *c.waiting.begin()->second.front();
    const bool same_job = std::any_of(pick.begin(), pick.end(), [&](const Candidate& j) {
      return r.queue >= 0 && j.what[fk::kQueue] == r.queue && j.what[fk::kJob] == r.job;
    });
    if (!same_job) pick.push_back(std::move(c));
  }
  if (pick.empty()) return nullptr;
  const Candidate& c = *std::min_element(pick.begin(), pick.end(), [](const Candidate& a, const Candidate& b) { return a.time < b.time; });
  json out = c.what;
  out[fk::kEntered] = c.entered, out["missing"] = c.missing;
  out["waiting"] = json::array();
  for (const auto& [rank, records] : c.waiting)
    for (const FlightRecordRead* r : records) {
      json w = record(dumps_.ranks.at(rank), *r);
      w[fk::kRank] = rank;
      out["waiting"].push_back(std::move(w));
    }
  out["missing_detail"] = json::array();
  for (int rank : c.missing)
    out["missing_detail"].push_back(dumps_.ranks.count(rank) ? rank_state(dumps_.ranks.at(rank)) : json{{fk::kRank, rank}, {"dead", true}});
  return out;
}

json Analysis::communicators() const {
  json out = json::array();
  for (const auto& [key, g] : groups_) {
    json c = {{fk::kComm, g.info->id}, {fk::kName, g.info->name}, {fk::kLevel, g.info->level}, {fk::kBackend, g.info->backend}, {fk::kMembers, g.info->members}};
    json entered = json::object(), completed = json::object();
    std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
    for (const auto& [rank, cm] : g.ranks) {
      entered[std::to_string(rank)] = cm->entered, completed[std::to_string(rank)] = cm->completed;
      seen.insert({cm->entered, cm->completed});
    }
    c[fk::kEntered] = entered, c["completed"] = completed;
    c["ranks_differ"] = seen.size() > 1;
    out.push_back(std::move(c));
  }
  return out;
}

json Analysis::result() const {
  const FlightDumpRead& any = dumps_.ranks.begin()->second;
  json j = {{fk::kJob, any.job}, {fk::kWorldSize, world_}, {fk::kTopology, any.topology}, {"folder", dumps_.folder}, {"problems", dumps_.problems}, {"dead", dead_}};
  j["dumps"] = json::array();
  j["ranks"] = json::array();
  for (const auto& [rank, d] : dumps_.ranks) {
    j["dumps"].push_back({{fk::kRank, rank}, {"file", d.file}, {fk::kReason, d.reason}, {fk::kTimeNs, d.time_ns}});
    j["ranks"].push_back(rank_state(d));
  }
  j["mismatches"] = mismatches();
  j["first_missing"] = first_missing();
  bool snapshot = true;
  for (const auto& [rank, d] : dumps_.ranks) snapshot = snapshot && d.reason == "SIGUSR2";
  j["suspect"] = snapshot ? json(nullptr) : flight_suspect(dumps_, !j["first_missing"].is_null());
  j["communicators"] = communicators();
  return j;
}

// --- the text -----------------------------------------------------------------------------------------------------------

std::vector<int> ints(const json& a) { return a.get<std::vector<int>>(); }

Collective collective_named(const std::string& name) {
  for (int i = 0; i < kNumCollectives; ++i)
    if (collective_name(static_cast<Collective>(i)) == name) return static_cast<Collective>(i);
  return Collective::barrier;  // not reached: the dumps' names are checked when read
}

std::string members_text(const json& m) {
  std::string s;
  for (const json& r : m) s += (s.empty() ? "" : ",") + std::to_string(r.get<int>());
  return "{" + s + "}";
}

// "forward_gather of unit 5 in step 3, micro 0, 8-bit" (what the engine tagged)
std::string tag_text(const json& r) {
  std::string s = r[fk::kPhase].get<std::string>();
  if (r[fk::kUnit].get<int>() >= 0) s += " of unit " + std::to_string(r[fk::kUnit].get<int>());
  if (r[fk::kStep].get<std::int64_t>() >= 0) s += " in step " + std::to_string(r[fk::kStep].get<std::int64_t>());
  if (r[fk::kMicro].get<int>() >= 0) s += ", micro " + std::to_string(r[fk::kMicro].get<int>());
  if (r.contains(fk::kBits) && r[fk::kBits].get<int>() < 16) s += ", " + std::to_string(r[fk::kBits].get<int>()) + "-bit";
  return s;
}

// "all_gather on communicator 7 (1024 bytes of uint8), its #41 [hop(world), level world, ranks {1,5}; forward_gather of unit 5, step 3]"
std::string record_text(const json& r) {
  std::string s = describe_collective(r[fk::kComm].get<std::uint64_t>(), collective_named(r[fk::kOp]), r[fk::kBytes].get<std::uint64_t>(),
                                      r[fk::kDtype].get<std::string>()) +
                  ", its #" + std::to_string(r[fk::kSeq].get<std::uint64_t>()) + " [";
  if (r.contains(fk::kName)) s += r[fk::kName].get<std::string>() + ", level " + r[fk::kLevel].get<std::string>() + ", ranks " + members_text(r[fk::kMembers]) + "; ";
  s += tag_text(r);
  if (r[fk::kQueue].get<int>() >= 0) s += "; queue " + std::to_string(r[fk::kQueue].get<int>()) + " job " + std::to_string(r[fk::kJob].get<std::uint64_t>());
  return s + "]";
}

std::string activity_text(const json& a) {
  std::string s = a[fk::kWhat].get<std::string>();
  if (a[fk::kUnit].get<int>() >= 0) s += " of unit " + std::to_string(a[fk::kUnit].get<int>());
  if (a[fk::kStep].get<std::int64_t>() >= 0) s += " (step " + std::to_string(a[fk::kStep].get<std::int64_t>()) + ")";
  return s + " for " + seconds(a["for_s"].get<double>());
}

// What a rank was doing: the collectives it waits in, else its activity.
std::string doing_text(const json& state) {
  if (state.value("dead", false)) return "dead: no usable dump (killed, or ended before it could write one)";
  std::string s;
  for (const json& r : state["waiting_in"])
    s += (s.empty() ? "waiting in " : "; and in ") + record_text(r) + " for " + seconds(r["started_s_before_dump"].get<double>());
  return s.empty() ? "in no collective: " + activity_text(state[fk::kActivity]) : s + "; activity: " + activity_text(state[fk::kActivity]);
}

// The job or collective of first_missing.
std::string missing_what(const json& f) {
  if (f["kind"] == "collective") {
    json r = f;
    r[fk::kQueue] = -1, r[fk::kJob] = 0;
    return record_text(r);
  }
  std::string s = "queue " + std::to_string(f[fk::kQueue].get<int>()) + " job " + std::to_string(f[fk::kJob].get<std::uint64_t>());
  if (!f.contains(fk::kPhase)) return s;
  std::string ops, levels;
  for (const json& o : f["ops"]) ops += (ops.empty() ? "" : ",") + o.get<std::string>();
  for (const json& l : f["levels"]) levels += (levels.empty() ? "" : ",") + l.get<std::string>();
  return s + " (" + tag_text(f) + ": " + ops + " on level" + (f["levels"].size() > 1 ? "s " : " ") + levels + ")";
}

std::string mismatch_text(const json& m) {
  std::string s = "the ranks' collectives differ at #" + std::to_string(m[fk::kSeq].get<std::uint64_t>()) + " of communicator " +
                  std::to_string(m[fk::kComm].get<int>()) + " (" + m[fk::kName].get<std::string>() + ", level " + m[fk::kLevel].get<std::string>() +
                  ", ranks " + members_text(m[fk::kMembers]) + "): ";
  bool first = true;
  for (const json& side : m["sides"]) {
    s += (first ? "" : ", ") + ranks_text(ints(side["ranks"])) + " issued " +
         describe_collective(m[fk::kComm].get<std::uint64_t>(), collective_named(side[fk::kOp]), side[fk::kBytes].get<std::uint64_t>(),
                             side[fk::kDtype].get<std::string>());
    first = false;
  }
  return s;
}

// The suspect of flight_suspect.h in words.
std::string suspect_text(const json& s) {
  const std::string how = s["how"];
  if (how == "partition") {
    std::string groups;
    for (const json& g : s["groups"]) groups += (groups.empty() ? "" : " and ") + ranks_text(ints(g));
    return "the ranks wait for each other across level " + s["level"].get<std::string>() + ": " + std::to_string(s["collectives"].get<int>()) +
           " collective(s) that all their members entered did not complete between the " + s["groups_level"].get<std::string>() +
           " groups " + groups + ", and no rank was stopped or late: the link or network of level " + s["level"].get<std::string>() +
           " failed (a partition), not a rank";
  }
  const std::string rank = "rank " + std::to_string(s[fk::kRank].get<int>());
  if (how == "paused") {
    std::string v = rank + " was stopped: its process did not run for " + seconds(s["paused_s"].get<double>()) + " (from " +
                    seconds(s["stopped_s_before_dump"].get<double>()) + " to " + seconds(s["resumed_s_before_dump"].get<double>()) +
                    " before its dump: SIGSTOP, a debugger or a frozen host) while the others waited";
    for (std::size_t i = 1; i < s["paused_ranks"].size(); ++i)
      v += "; rank " + std::to_string(s["paused_ranks"][i][fk::kRank].get<int>()) + " also stood still for " +
           seconds(s["paused_ranks"][i]["paused_s"].get<double>());
    return v;
  }
  if (how == "late") {
    return rank + " held the others up: it entered its #" + std::to_string(s[fk::kSeq].get<std::uint64_t>()) + " " + s[fk::kOp].get<std::string>() +
           " on communicator " + std::to_string(s[fk::kComm].get<int>()) + " (" + tag_text(s) + ") " + seconds(s["late_s"].get<double>()) +
           " after " + ranks_text(ints(s["waited"])) + ", which waited in it";
  }
  return "most likely " + rank + " (not conclusive: no rank is missing from a collective the others wait in): its last progress was " +
         seconds(s["last_progress_s_before_dump"].get<double>()) + " before its dump, " + seconds(s["ahead_s"].get<double>()) +
         " before any other rank's";
}

// The headline: the first mismatch, the dead ranks, the suspect, the first collective some ranks are missing from
// (left out when a suspect other than its missing ranks, or a partition, explains the hang).
std::string verdict(const json& j) {
  const json& f = j["first_missing"];
  const json& s = j["suspect"];
  std::vector<std::string> parts;
  if (!j["mismatches"].empty()) parts.push_back("mismatch: " + mismatch_text(j["mismatches"][0]));
  if (!j["dead"].empty())
    parts.push_back(ranks_text(ints(j["dead"])) + (j["dead"].size() == 1 ? " has" : " have") +
                    " no usable dump: dead (killed, or ended before it could write one)");
  if (!s.is_null()) parts.push_back(suspect_text(s));
  const auto names_suspect = [&] {
    return s.is_null() || (s.contains(fk::kRank) && std::find(f["missing"].begin(), f["missing"].end(), s[fk::kRank]) != f["missing"].end());
  };
  if (!f.is_null() && names_suspect()) {
    std::set<int> waiting;
    for (const json& w : f["waiting"]) waiting.insert(w[fk::kRank].get<int>());
    std::string missing;
    for (const json& m : f["missing_detail"])
      missing += (missing.empty() ? "" : ",") + std::to_string(m[fk::kRank].get<int>()) + (m.value("dead", false) ? " (dead)" : "");
    std::string v = (f["missing"].size() == 1 ? "rank " : "ranks ") + missing + (f["missing"].size() == 1 ? " is" : " are") +
                    " missing from " + missing_what(f) + ", which " + ranks_text(std::vector<int>(waiting.begin(), waiting.end())) +
                    (waiting.size() == 1 ? " waits in" : " wait in");
    for (const json& m : f["missing_detail"])
      if (!m.value("dead", false)) v += "; rank " + std::to_string(m[fk::kRank].get<int>()) + " was " + doing_text(m);
    parts.push_back(v);
  }
  bool snapshot = true;
  for (const json& d : j["dumps"]) snapshot = snapshot && d[fk::kReason] == "SIGUSR2";
  const std::string prefix = snapshot ? "a snapshot of a running job (every dump on SIGUSR2), not a hang" : "";
  if (parts.empty()) return prefix.empty() ? "no collective waits for a missing rank" : prefix + "; no collective waits for a missing rank";
  if (!prefix.empty()) parts.insert(parts.begin(), prefix + "; at that moment");
  std::string v;
  for (const std::string& p : parts) v += (v.empty() ? "" : "; ") + p;
  return v;
}

std::string text_of(const json& j) {
  std::map<std::string, std::vector<int>> reasons;
  for (const json& d : j["dumps"]) reasons[d[fk::kReason]].push_back(d[fk::kRank]);
  std::string why;
  for (const auto& [reason, ranks] : reasons) why += (why.empty() ? "" : "; ") + ranks_text(ranks) + ": " + reason;
  const auto count = [](std::size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
  std::string t = "tierzero diagnose: job " + j[fk::kJob].get<std::string>() + ", " + count(j[fk::kWorldSize].get<std::size_t>(), "rank") + " (" +
                  j[fk::kTopology].get<std::string>() + "), " + count(j["dumps"].size(), "dump") + " in " + j["folder"].get<std::string>() +
                  " (" + why + ")\n";
  t += "verdict: " + verdict(j) + "\n";
  if (const json& f = j["first_missing"]; !f.is_null()) {
    t += "first collective some ranks entered and others did not: " + missing_what(f) + "\n  waiting in it:\n";
    for (const json& w : f["waiting"])
      t += "    rank " + std::to_string(w[fk::kRank].get<int>()) + ": " + record_text(w) + " for " + seconds(w["started_s_before_dump"].get<double>()) + "\n";
    t += "  missing from it:\n";
    for (const json& m : f["missing_detail"]) {
      t += "    rank " + std::to_string(m[fk::kRank].get<int>()) + ": " + doing_text(m);
      if (m.contains("last_completed") && !m["last_completed"].is_null())
        t += "; its last completed collective: " + record_text(m["last_completed"]) + ", " +
             seconds(m["last_completed"]["completed_s_before_dump"].get<double>()) + " before its dump";
      t += "\n";
    }
  }
  t += "mismatches:" + std::string(j["mismatches"].empty() ? " none" : "") + "\n";
  for (const json& m : j["mismatches"]) t += "  " + mismatch_text(m) + "\n";
  t += "dead ranks: " + (j["dead"].empty() ? std::string("none") : ranks_text(ints(j["dead"])) + " (no usable dump)") + "\n";
  t += "ranks at their dumps:\n";
  for (const json& r : j["ranks"]) {
    t += "  rank " + std::to_string(r[fk::kRank].get<int>()) + " (" + r[fk::kReason].get<std::string>() + "): " + doing_text(r);
    if (r["waiting_in"].empty() && !r["last_completed"].is_null()) t += "; last collective: " + record_text(r["last_completed"]);
    t += "\n";
  }
  t += "communicators whose ranks differ (last sequence number entered/completed per rank):\n";
  bool any = false;
  for (const json& c : j["communicators"]) {
    if (!c["ranks_differ"].get<bool>()) continue;
    any = true;
    t += "  communicator " + std::to_string(c[fk::kComm].get<int>()) + " " + c[fk::kName].get<std::string>() + " (level " + c[fk::kLevel].get<std::string>() +
         ", ranks " + members_text(c[fk::kMembers]) + "):";
    for (const auto& [rank, entered] : c[fk::kEntered].items())
      t += " rank " + rank + " " + std::to_string(entered.get<std::uint64_t>()) + "/" + std::to_string(c["completed"][rank].get<std::uint64_t>());
    t += "\n";
  }
  if (!any) t += "  none: every rank entered and completed the same collectives\n";
  for (const json& p : j["problems"]) t += "problem: " + p.get<std::string>() + "\n";
  return t;
}

}  // namespace

FlightDiagnosis diagnose_flight(const std::string& dir) {
  const FlightDumps dumps = read_flight_dumps(dir);
  const json j = Analysis(dumps).result();
  return {text_of(j), j.dump(), dumps.problems};
}

}  // namespace tierzero
