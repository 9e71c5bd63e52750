// The flight recorder (tierzero/flight_recorder.h) in one process, on the
// world of one: what a record holds, the ring, a reader racing a writer,
// the kept failure dump; and tierzero diagnose's handling of damaged and
// foreign dumps (tierzero/flight_diagnose.h). tests/flight_test.sh runs the
// faults of real 8- and 3-rank jobs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "comm/comm_schedule.h"
#include "comm/flight_keys.h"
#include "comm/flight_state.h"
#include "tierzero/communicator.h"
#include "tierzero/error.h"
#include "tierzero/flight_diagnose.h"
#include "tierzero/flight_recorder.h"

namespace tierzero {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class FlightRecorderTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tierzero-flight-" + std::to_string(::getpid()) + "-" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    world_ = self_world(Topology({1, 1, 1}, {Level::node, Level::world}));
  }
  void TearDown() override { fs::remove_all(dir_); }
  void start(std::size_t records) { start_flight_recorder(*world_, {records, dir_.string()}); }
  json dump(const char* reason = "test") {
    EXPECT_TRUE(flight_dump(reason, FlightDumpKind::request));
    std::ifstream in(dir_ / "flight" / "rank-0.json");
    return json::parse(in);
  }
  // The communicator's records in the dump.
  static std::vector<json> records_of(const json& d, int comm) {
    std::vector<json> out;
    for (const json& r : d["records"])
      if (r["comm"] == comm) out.push_back(r);
    return out;
  }
  fs::path dir_;
  std::unique_ptr<Communicator> world_;
};

TEST_F(FlightRecorderTest, RecordsWhatEachCollectiveWasAndWhatTheRankDid) {
  start(64);
  auto comm = world_->split_by(0);  // a communicator of its own: sequence numbers from 1
  float f[10] = {}, g[10];
  std::uint16_t h[4] = {};
  flight_step(7, 1);
  {
    const FlightPhaseScope tagged(FlightPhase::forward_gather, 3);
    comm->all_gather(f, g, 10, DType::f32);
  }
  comm->all_reduce(h, h, 4, DType::bf16, ReduceOp::sum);
  {
    CommSchedule schedule;
    const FlightPhaseScope tagged(FlightPhase::reduction, 5);
    schedule.iall_reduce(*comm, host_memory(), f, f, 3, DType::f32, ReduceOp::sum).wait();
  }
  flight_activity(FlightActivity::backward, 2);
  const json d = dump();
  EXPECT_EQ(d["format"], "tierzero-flight");
  EXPECT_EQ(d["world_size"], 1);
  EXPECT_EQ(d["rank"], 0);
  EXPECT_EQ(d["reason"], "test");
  EXPECT_EQ(d["kind"], "request");
  EXPECT_EQ(d["version"], 1);
  EXPECT_EQ(d["minor"], 1);  // kind and liveness added
  // The ticker read the clock at the start at the latest, and not after the dump.
  EXPECT_GT(d["liveness"]["tick_ns"].get<std::int64_t>(), 0);
  EXPECT_LE(d["liveness"]["tick_ns"].get<std::int64_t>(), d["time_ns"].get<std::int64_t>());
  EXPECT_EQ(d["activity"]["what"], "backward");
  EXPECT_EQ(d["activity"]["unit"], 2);
  EXPECT_EQ(d["activity"]["step"], 7);
  const std::vector<json> r = records_of(d, comm->flight_id());
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0]["seq"], 1);
  EXPECT_EQ(r[0]["op"], "all_gather");
  EXPECT_EQ(r[0]["bytes"], 40);
  EXPECT_EQ(r[0]["dtype"], "fp32");
  EXPECT_EQ(r[0]["phase"], "forward_gather");
  EXPECT_EQ(r[0]["unit"], 3);
  EXPECT_EQ(r[0]["step"], 7);
  EXPECT_EQ(r[0]["micro"], 1);
  EXPECT_EQ(r[0]["queue"], -1);  // called directly: queued when started
  EXPECT_EQ(r[0]["queued_ns"], r[0]["started_ns"]);
  EXPECT_EQ(r[1]["seq"], 2);
  EXPECT_EQ(r[1]["op"], "all_reduce");
  EXPECT_EQ(r[1]["bytes"], 8);
  EXPECT_EQ(r[1]["dtype"], "bf16");
  EXPECT_EQ(r[1]["phase"], "none");
  EXPECT_EQ(r[1]["unit"], -1);
  EXPECT_EQ(r[2]["seq"], 3);
  EXPECT_EQ(r[2]["phase"], "reduction");
  EXPECT_EQ(r[2]["unit"], 5);
  EXPECT_GE(r[2]["queue"], 0);
  EXPECT_EQ(r[2]["job"], 1);  // the schedule's job 0 prepares its executor
  for (const json& x : r) {
    EXPECT_LE(x["queued_ns"].get<std::int64_t>(), x["started_ns"].get<std::int64_t>());
    EXPECT_LE(x["started_ns"].get<std::int64_t>(), x["completed_ns"].get<std::int64_t>());
    EXPECT_LE(x["completed_ns"].get<std::int64_t>(), d["time_ns"].get<std::int64_t>());
  }
  const json& c = d["communicators"][comm->flight_id()];
  EXPECT_EQ(c["name"], "self");
  EXPECT_EQ(c["backend"], "self");
  EXPECT_EQ(c["entered"], 3);
  EXPECT_EQ(c["completed"], 3);
}

TEST_F(FlightRecorderTest, TheRingKeepsTheLastRecords) {
  start(4);
  auto comm = world_->split_by(0);
  float x = 0;
  for (int i = 0; i < 10; ++i) comm->all_reduce(&x, &x, 1, DType::f32, ReduceOp::sum);
  const json d = dump();
  EXPECT_EQ(d["records_kept"], 4);
  EXPECT_EQ(d["records_total"], 10);
  const std::vector<json> r = records_of(d, comm->flight_id());
  ASSERT_EQ(r.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r[i]["seq"], 7 + i);
  EXPECT_EQ(d["communicators"][comm->flight_id()]["entered"], 10);
}

TEST_F(FlightRecorderTest, ADumpSeesWholeRecordsWhileAnotherThreadRecords) {
  start(8);  // a short ring: the writer overwrites slots while the dumps read them
  auto comm = world_->split_by(0);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    float buf[64];
    for (int i = 0; !stop.load(); ++i) {
      const int count = i % 64 + 1;
      const FlightPhaseScope tagged(FlightPhase::reduction, count);  // unit == count in every whole record
      comm->all_reduce(buf, buf, static_cast<std::size_t>(count), DType::f32, ReduceOp::sum);
    }
  });
  // At least 200 dumps, and on until more than 200 whole records were checked (on a loaded machine the writer may
  // not be scheduled for a while: 200 dumps saw 198 in one run) or 30 s have passed.
  std::size_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int k = 0; k < 200 || (seen <= 200 && std::chrono::steady_clock::now() < deadline); ++k) {
    const json d = dump();
    for (const json& r : records_of(d, comm->flight_id())) {
      ASSERT_EQ(r["bytes"].get<int>(), 4 * r["unit"].get<int>()) << r.dump();
      ASSERT_EQ(r["op"], "all_reduce");
      ++seen;
    }
  }
  stop = true;
  writer.join();
  EXPECT_GT(seen, 200u);
}

// The slot's stamp: a reader gets a whole record or none, never fields of two.
TEST(FlightSlotTest, AReaderNeverSeesHalfARecord) {
  FlightSlot slot;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (std::uint64_t t = 0; !stop.load(std::memory_order_relaxed); ++t) {
      FlightEntry e;
      e.seq = e.bytes = e.step = e.started_ns = static_cast<std::int64_t>(t);
      e.unit = static_cast<std::int32_t>(t & 0x7fffffff);
      slot.write(t, e);
      for (int spin = 0; spin < 50; ++spin) asm volatile("" ::: "memory");  // leaves the reader some whole records to read between writes
    }
  });
  // Reads until 1000 whole records have been checked (a reader on a loaded machine may spin before the writer is
  // ever scheduled: a fixed count of reads saw none), or 30 s have passed.
  std::size_t whole = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int i = 0; whole <= 1000 || i < 3000000; ++i) {
    if ((i & 0xffff) == 0 && std::chrono::steady_clock::now() > deadline) break;
    std::uint64_t ticket = 0;
    FlightEntry e;
    if (!slot.read(ticket, e)) continue;
    const auto t = static_cast<std::int64_t>(ticket);
    ASSERT_TRUE(e.seq == t && e.bytes == t && e.step == t && e.started_ns == t && e.unit == static_cast<std::int32_t>(t & 0x7fffffff))
        << "ticket " << t << ": seq " << e.seq << " bytes " << e.bytes << " step " << e.step << " unit " << e.unit;
    ++whole;
  }
  stop = true;
  writer.join();
  EXPECT_GT(whole, 1000u) << "too few whole reads to say anything";
}

TEST_F(FlightRecorderTest, OffRecordsAndDumpsNothing) {
  start(0);
  float x = 0;
  world_->all_reduce(&x, &x, 1, DType::f32, ReduceOp::sum);
  EXPECT_FALSE(flight_recording());
  EXPECT_FALSE(flight_dump("test", FlightDumpKind::failure));
  EXPECT_FALSE(fs::exists(dir_ / "flight" / "rank-0.json"));
}

TEST_F(FlightRecorderTest, AFailureDumpIsKept) {
  start(16);
  EXPECT_TRUE(flight_dump("comm-timeout", FlightDumpKind::failure));
  EXPECT_FALSE(flight_dump("SIGUSR2", FlightDumpKind::request));
  EXPECT_FALSE(flight_dump("SIGTERM", FlightDumpKind::stop));
  std::ifstream in(dir_ / "flight" / "rank-0.json");
  const json d = json::parse(in);
  EXPECT_EQ(d["reason"], "comm-timeout");
  EXPECT_EQ(d["kind"], "failure");
  start(16);  // a new job starts afresh: the old dump is removed
  EXPECT_FALSE(fs::exists(dir_ / "flight" / "rank-0.json"));
  EXPECT_TRUE(flight_dump("SIGUSR2", FlightDumpKind::request));
}

// Diagnose on a two-rank job made from this rank's dump: rank 1's file changed as each case needs.
class FlightDiagnoseTest : public FlightRecorderTest {
 protected:
  void make_job() {
    start(16);
    float x = 0;
    world_->all_reduce(&x, &x, 1, DType::f32, ReduceOp::sum);
    json d = dump();
    d["world_size"] = 2;
    write(0, d);
    d["rank"] = 1;
    rank1_ = d;
  }
  void write(int rank, const json& d) { std::ofstream(dir_ / "flight" / ("rank-" + std::to_string(rank) + ".json")) << d.dump(); }
  json rank1_;
};

TEST_F(FlightDiagnoseTest, TwoHealthyRanks) {
  make_job();
  write(1, rank1_);
  const FlightDiagnosis v = diagnose_flight(dir_.string());
  EXPECT_TRUE(v.problems.empty());
  EXPECT_NE(v.text.find("verdict: no collective waits for a missing rank"), std::string::npos) << v.text;
  EXPECT_EQ(json::parse(v.json)["dead"].size(), 0u);
}

TEST_F(FlightDiagnoseTest, AMissingDumpIsADeadRank) {
  make_job();
  const json v = json::parse(diagnose_flight(dir_.string()).json);
  EXPECT_EQ(v["dead"], json::array({1}));
}

TEST_F(FlightDiagnoseTest, ATruncatedDumpIsNamedAndTheRestDiagnosed) {
  make_job();
  const std::string whole = rank1_.dump();
  std::ofstream(dir_ / "flight" / "rank-1.json") << whole.substr(0, whole.size() / 2);
  const FlightDiagnosis v = diagnose_flight(dir_.string());
  ASSERT_EQ(v.problems.size(), 1u);
  EXPECT_NE(v.problems[0].find("rank-1.json: unusable (truncated or corrupt)"), std::string::npos) << v.problems[0];
  EXPECT_EQ(json::parse(v.json)["dead"], json::array({1}));
}

TEST_F(FlightDiagnoseTest, ADumpOfAnotherJobIsLeftOut) {
  make_job();
  rank1_["job"] = "another";
  write(1, rank1_);
  const FlightDiagnosis v = diagnose_flight(dir_.string());
  ASSERT_EQ(v.problems.size(), 1u);
  EXPECT_NE(v.problems[0].find("rank-1.json: a dump of another job (another)"), std::string::npos) << v.problems[0];
}

TEST_F(FlightDiagnoseTest, AMismatchIsNamedWithBothSides) {
  make_job();
  for (json& r : rank1_["records"])
    if (r["op"] == "all_reduce") r["bytes"] = 12;
  write(1, rank1_);
  const FlightDiagnosis v = diagnose_flight(dir_.string());
  const std::string c = "communicator " + std::to_string(world_->flight_id());
  EXPECT_NE(v.text.find("mismatch: the ranks' collectives differ at #1 of " + c), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("rank 0 issued all_reduce on " + c + " (4 bytes of fp32), rank 1 issued all_reduce on " + c + " (12 bytes of fp32)"),
            std::string::npos)
      << v.text;
}

// Writer, reader and re-emitter spell a record alike (comm/flight_keys.h):
// the dump's record has exactly the keys listed there, and the verdict
// re-emits each of them with the value written.
TEST_F(FlightDiagnoseTest, ARecordRoundTripsThroughWriterReaderAndVerdict) {
  make_job();
  write(1, rank1_);
  const json written = rank1_["records"].back();
  std::set<std::string> keys;
  for (const auto& [k, v] : written.items()) keys.insert(k);
  std::set<std::string> listed(std::begin(flight_key::kReemittedRecordKeys), std::end(flight_key::kReemittedRecordKeys));
  listed.insert({flight_key::kQueuedNs, flight_key::kStartedNs, flight_key::kCompletedNs});
  EXPECT_EQ(keys, listed);
  const json v = json::parse(diagnose_flight(dir_.string()).json);
  ASSERT_EQ(v["ranks"].size(), 2u);
  for (const json& rank : v["ranks"]) {
    const json& again = rank["last_completed"];
    ASSERT_TRUE(again.is_object()) << rank.dump();
    for (const char* k : flight_key::kReemittedRecordKeys) EXPECT_EQ(again[k], written[k]) << k;
    EXPECT_EQ(again[flight_key::kLevel], flight_key::kSelf) << again.dump();  // the world of one rank
  }
}

TEST_F(FlightDiagnoseTest, NoDumpsIsAnError) {
  fs::create_directories(dir_ / "flight");
  try {
    diagnose_flight(dir_.string());
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find("no flight dumps (rank-R.json) in"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace tierzero
