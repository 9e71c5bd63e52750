// tierzero diagnose's suspect (comm/flight_suspect.h) on dumps written by
// hand: 4 ranks on node=2,world=2 (nodes {0,1} and {2,3}), every rank in
// collective #5 of its communicator, with the clocks that make each verdict:
// a rank whose process stood still, a rank that entered late, a partition of
// level world, and, when nothing is conclusive, the rank that stopped first.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tierzero/flight_diagnose.h"

namespace tierzero {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::int64_t kT = 1'700'000'000'000'000'000;  // the first rank's start of #5
constexpr std::int64_t kS = 1'000'000'000;              // one second

// One rank's dump: waiting in #5 of `comm` (started at `started`), its ticker's last reading `tick` (0: an older dump
// without one), its dump at kT + 6 s.
json dump(int rank, const std::string& topology, const json& comm, std::int64_t started, std::int64_t tick) {
  const std::int64_t at = kT + 6 * kS;
  json r = {{"comm", comm["id"]},   {"seq", 5},      {"op", "all_gather"}, {"bytes", 64}, {"dtype", "uint8"}, {"bits", 16},
            {"queue", -1},          {"job", 0},      {"step", 3},          {"micro", 0},  {"phase", "forward_gather"},
            {"unit", 1},            {"queued_ns", started}, {"started_ns", started}, {"completed_ns", 0}};
  json done = r;
  done["seq"] = 4, done["queued_ns"] = done["started_ns"] = kT - kS, done["completed_ns"] = kT - kS / 2;
  json d = {{"format", "tierzero-flight"}, {"version", 1}, {"minor", 1}, {"job", "j"}, {"world_size", 4}, {"rank", rank},
            {"topology", topology}, {"reason", "comm-timeout"}, {"kind", "failure"}, {"time_ns", at},
            {"activity", {{"what", "forward"}, {"unit", 1}, {"step", 3}, {"micro", 0}, {"since_ns", kT - kS}}},
            {"queues", json::array()}, {"communicators", json::array({comm})}, {"records", json::array({done, r})}};
  if (tick) d["liveness"] = {{"tick_interval_ns", 100'000'000}, {"tick_ns", tick}, {"pause_ns", 0}, {"pause_end_ns", 0}};
  return d;
}

class FlightSuspectTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tierzero-diagnose-" + std::to_string(::getpid()) + "-" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Writes the dumps; returns the diagnosis as JSON and its verdict line.
  std::pair<json, std::string> diagnose(const std::vector<json>& dumps) {
    for (const json& d : dumps) std::ofstream(dir_ / ("rank-" + std::to_string(d["rank"].get<int>()) + ".json")) << d.dump();
    const FlightDiagnosis d = diagnose_flight(dir_.string());
    EXPECT_TRUE(d.problems.empty());
    const std::size_t at = d.text.find("verdict: ");
    return {json::parse(d.json), d.text.substr(at, d.text.find('\n', at) - at)};
  }
  // The world-level pair {rank mod 2, rank mod 2 + 2}: every member entered #5.
  static json cross(int rank) {
    return {{"id", 1}, {"name", "hop(world)"}, {"level", "world"}, {"backend", "mpi"}, {"members", {rank % 2, rank % 2 + 2}},
            {"entered", 5}, {"completed", 4}};
  }
  fs::path dir_;
};

TEST_F(FlightSuspectTest, ARankWhoseProcessStoodStillIsNamedStopped) {
  std::vector<json> d;
  for (int r = 0; r < 4; ++r) d.push_back(dump(r, "node=2,world=2", cross(r), kT + r * kS / 10, kT + 6 * kS - kS / 20));
  d[3]["liveness"]["tick_ns"] = kT - 2 * kS;  // no tick for the last 8 s: stopped, then dumped on waking
  const auto [v, line] = diagnose(d);
  EXPECT_EQ(v["suspect"]["how"], "paused");
  EXPECT_EQ(v["suspect"]["rank"], 3);
  EXPECT_DOUBLE_EQ(v["suspect"]["paused_s"].get<double>(), 8.0);
  EXPECT_EQ(line.rfind("verdict: rank 3 was stopped: its process did not run for 8.00 s", 0), 0u) << line;
}

TEST_F(FlightSuspectTest, AClosedPauseDuringTheWaitCountsAndAnEarlierOneDoesNot) {
  std::vector<json> d;
  for (int r = 0; r < 4; ++r) d.push_back(dump(r, "node=2,world=2", cross(r), kT + r * kS / 10, kT + 6 * kS - kS / 20));
  d[1]["liveness"]["pause_ns"] = 5 * kS, d[1]["liveness"]["pause_end_ns"] = kT - 2 * kS;  // before anyone waited
  d[2]["liveness"]["pause_ns"] = 4 * kS, d[2]["liveness"]["pause_end_ns"] = kT + 5 * kS;  // while the others waited
  const auto [v, line] = diagnose(d);
  EXPECT_EQ(v["suspect"]["how"], "paused");
  EXPECT_EQ(v["suspect"]["rank"], 2);
  EXPECT_EQ(v["suspect"]["paused_ranks"].size(), 1u);
  EXPECT_DOUBLE_EQ(v["suspect"]["resumed_s_before_dump"].get<double>(), 1.0);
}

TEST_F(FlightSuspectTest, ARankThatEnteredLateIsNamedWithHowLate) {
  std::vector<json> d;
  for (int r = 0; r < 4; ++r) d.push_back(dump(r, "node=2,world=2", cross(r), kT + r * kS / 10, 0));  // older dumps: no ticker
  d[2]["records"][1]["started_ns"] = d[2]["records"][1]["queued_ns"] = kT + 4 * kS;  // 4 s after rank 0, its partner
  const auto [v, line] = diagnose(d);
  EXPECT_EQ(v["suspect"]["how"], "late");
  EXPECT_EQ(v["suspect"]["rank"], 2);
  EXPECT_DOUBLE_EQ(v["suspect"]["late_s"].get<double>(), 4.0);
  EXPECT_EQ(v["suspect"]["waited"], json::array({0}));
  EXPECT_EQ(line.rfind("verdict: rank 2 held the others up: it entered its #5 all_gather on communicator 1", 0), 0u) << line;
}

TEST_F(FlightSuspectTest, CollectivesStuckWithEveryMemberAcrossOneLevelAreAPartition) {
  std::vector<json> d;
  for (int r = 0; r < 4; ++r) d.push_back(dump(r, "node=2,world=2", cross(r), kT + r * kS / 10, kT + 6 * kS - kS / 20));
  const auto [v, line] = diagnose(d);
  EXPECT_EQ(v["suspect"]["how"], "partition");
  EXPECT_EQ(v["suspect"]["level"], "world");
  EXPECT_EQ(v["suspect"]["groups"], json::parse("[[0,1],[2,3]]"));
  EXPECT_EQ(v["suspect"]["collectives"], 2);
  EXPECT_EQ(line,
            "verdict: the ranks wait for each other across level world: 2 collective(s) that all their members entered did not "
            "complete between the node groups ranks 0,1 and ranks 2,3, and no rank was stopped or late: the link or network of "
            "level world failed (a partition), not a rank");
}

TEST_F(FlightSuspectTest, WithNothingConclusiveTheRankThatStoppedFirstIsTheLikeliest) {
  // One package: the stuck collectives cross no link between groups, so no partition; rank 1's last progress is the oldest.
  std::vector<json> d;
  for (int r = 0; r < 4; ++r) {
    json c = cross(r);
    c["level"] = "package", c["name"] = "split";
    d.push_back(dump(r, "package=4", c, kT + r * kS / 10, kT + 6 * kS - kS / 20));
  }
  d[1]["records"][1]["started_ns"] = d[1]["records"][1]["queued_ns"] = kT - kS / 4;
  const auto [v, line] = diagnose(d);
  EXPECT_EQ(v["suspect"]["how"], "first_to_stop");
  EXPECT_EQ(v["suspect"]["rank"], 1);
  EXPECT_FALSE(v["suspect"]["conclusive"].get<bool>());
  EXPECT_DOUBLE_EQ(v["suspect"]["ahead_s"].get<double>(), 0.25);
  EXPECT_EQ(line.rfind("verdict: most likely rank 1 (not conclusive", 0), 0u) << line;
}

}  // namespace
}  // namespace tierzero
