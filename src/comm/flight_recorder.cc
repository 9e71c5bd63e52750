// The recording side of the flight recorder (tierzero/flight_recorder.h):
// the ring, the communicator and queue tables, the activity, the
// per-thread context, and Communicator's flight hooks.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "comm/flight_keys.h"
#include "comm/flight_state.h"
#include "tierzero/error.h"

namespace tierzero {

namespace fs = std::filesystem;

std::string_view flight_phase_name(FlightPhase p) {
  static constexpr const char* kNames[] = {"none",           "forward_gather", "backward_gather", "reduction",
                                           "optimizer_step", "checkpoint",     "evaluation",      "tensor"};
  return kNames[static_cast<int>(p)];
}

std::string_view flight_activity_name(FlightActivity a) {
  static constexpr const char* kNames[] = {"none", "data_load", "forward", "backward", "optimizer", "checkpoint_write", "offload_io", "evaluation"};
  return kNames[static_cast<int>(a)];
}

FlightRecorder& flight_recorder() {
  static FlightRecorder* const r = new FlightRecorder;  // never destroyed: a signal handler may dump during exit
  return *r;
}

FlightContext& flight_context() {
  thread_local FlightContext context;
  return context;
}

std::int64_t flight_now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The small fields of a record, packed into one word: op, dtype, phase, bits (8 bits each), queue + 1 (16), micro + 1 (16).
namespace {
std::int64_t pack(const FlightEntry& e) {
  const auto u = [](auto v, int shift) { return static_cast<std::uint64_t>(v) << shift; };
  return static_cast<std::int64_t>(u(static_cast<std::uint8_t>(e.op), 0) | u(static_cast<std::uint8_t>(e.dtype), 8) |
                                   u(static_cast<std::uint8_t>(e.phase), 16) | u(static_cast<std::uint8_t>(e.bits), 24) |
                                   u(static_cast<std::uint16_t>(e.queue + 1), 32) | u(static_cast<std::uint16_t>(e.micro + 1), 48));
}
void unpack(std::int64_t word, FlightEntry& e) {
  const auto w = static_cast<std::uint64_t>(word);
  e.op = static_cast<Collective>(w & 0xff);
  e.dtype = static_cast<DType>((w >> 8) & 0xff);
  e.phase = static_cast<FlightPhase>((w >> 16) & 0xff);
  e.bits = static_cast<std::int32_t>((w >> 24) & 0xff);
  e.queue = static_cast<std::int32_t>((w >> 32) & 0xffff) - 1;
  e.micro = static_cast<std::int32_t>((w >> 48) & 0xffff) - 1;
}
}  // namespace

void FlightSlot::write(std::uint64_t ticket, const FlightEntry& e) noexcept {
  stamp_.store(2 * ticket + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  const std::int64_t v[kNumFields] = {e.comm, e.seq, e.bytes, e.job, e.step, e.queued_ns, e.started_ns, e.completed_ns, pack(e)};
  for (int i = 0; i < kNumFields; ++i) f_[i].store(v[i], std::memory_order_relaxed);
  unit_.store(e.unit, std::memory_order_relaxed);
  stamp_.store(2 * ticket + 2, std::memory_order_release);
}

void FlightSlot::complete(std::uint64_t ticket, std::int64_t ns) noexcept {
  if (stamp_.load(std::memory_order_acquire) == 2 * ticket + 2) f_[kCompleted].store(ns, std::memory_order_relaxed);
}

bool FlightSlot::read(std::uint64_t& ticket, FlightEntry& e) const noexcept {
  const std::uint64_t before = stamp_.load(std::memory_order_acquire);
  if (before == 0 || before % 2 == 1) return false;
  std::int64_t v[kNumFields];
  for (int i = 0; i < kNumFields; ++i) v[i] = f_[i].load(std::memory_order_relaxed);
  const std::int32_t unit = unit_.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (stamp_.load(std::memory_order_relaxed) != before) return false;
  ticket = before / 2 - 1;
  e.comm = v[kComm], e.seq = v[kSeq], e.bytes = v[kBytes], e.job = v[kJob], e.step = v[kStep];
  e.queued_ns = v[kQueued], e.started_ns = v[kStarted], e.completed_ns = v[kCompleted];
  e.unit = unit;
  unpack(v[kPacked], e);
  return true;
}

void FlightActivityState::write(const std::uint64_t (&v)[4]) noexcept {
  const std::uint64_t s = stamp_.load(std::memory_order_relaxed);
  stamp_.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 0; i < 4; ++i) v_[i].store(v[i], std::memory_order_relaxed);
  stamp_.store(s + 2, std::memory_order_release);
}

void FlightActivityState::read(std::uint64_t (&v)[4]) const noexcept {
  for (int tries = 0; tries < 1000; ++tries) {  // the writer holds it for a few stores (or this handler interrupted it: give up)
    const std::uint64_t before = stamp_.load(std::memory_order_acquire);
    for (int i = 0; i < 4; ++i) v[i] = v_[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (before % 2 == 0 && stamp_.load(std::memory_order_relaxed) == before) return;
  }
  for (auto& x : v) x = 0;
}

// --- the activity: what (8 bits) | unit + 1 (32) ; step ; micro ; since -----------------------------------------------

namespace {
std::uint64_t activity_word(FlightActivity what, int unit) {
  return static_cast<std::uint64_t>(what) | static_cast<std::uint64_t>(static_cast<std::uint32_t>(unit + 1)) << 8;
}
}  // namespace

void flight_activity(FlightActivity what, int unit) {
  FlightRecorder& r = flight_recorder();
  if (!r.on.load(std::memory_order_relaxed)) return;
  const FlightTag& tag = flight_context().tag;
  const std::uint64_t v[4] = {activity_word(what, unit), static_cast<std::uint64_t>(tag.step), static_cast<std::uint64_t>(tag.micro),
                              static_cast<std::uint64_t>(flight_now_ns())};
  r.activity.write(v);
}

int flight_activity_unit() {
  FlightRecorder& r = flight_recorder();
  if (!r.on.load(std::memory_order_relaxed)) return -1;
  std::uint64_t v[4];
  r.activity.read(v);
  return static_cast<int>(static_cast<std::uint32_t>(v[0] >> 8)) - 1;
}

FlightActivityScope::FlightActivityScope(FlightActivity what, int unit) {
  flight_recorder().activity.read(saved_);
  flight_activity(what, unit);
}

FlightActivityScope::~FlightActivityScope() {
  FlightRecorder& r = flight_recorder();
  if (r.on.load(std::memory_order_relaxed)) r.activity.write(saved_);
}

void flight_step(std::int64_t step, int micro) {
  FlightTag& tag = flight_context().tag;
  tag.step = step, tag.micro = micro;
}

FlightPhaseScope::FlightPhaseScope(FlightPhase phase, int unit) {
  FlightTag& tag = flight_context().tag;
  phase_ = tag.phase, unit_ = tag.unit;
  tag.phase = phase, tag.unit = unit;
}

FlightPhaseScope::~FlightPhaseScope() {
  FlightTag& tag = flight_context().tag;
  tag.phase = phase_, tag.unit = unit_;
}

FlightJobScope::FlightJobScope(const FlightTag& tag, std::int64_t queued_ns, int queue, std::uint64_t job) : saved_(flight_context()) {
  FlightContext& c = flight_context();
  c.tag = tag, c.queued_ns = queued_ns, c.queue = queue, c.job = job, c.bits = 16;
}

FlightJobScope::~FlightJobScope() { flight_context() = saved_; }

// --- queues and communicators --------------------------------------------------------------------------------------

int flight_open_queue() {
  FlightRecorder& r = flight_recorder();
  std::lock_guard<std::mutex> lock(r.registering);
  const int q = r.num_queues.load(std::memory_order_relaxed);
  if (q == FlightRecorder::kMaxQueues) return -1;  // past the table: its jobs are not counted
  r.num_queues.store(q + 1, std::memory_order_release);
  return q;
}

void flight_job_started(int queue, std::uint64_t job) noexcept {
  FlightRecorder& r = flight_recorder();
  if (queue >= 0 && r.on.load(std::memory_order_relaxed)) r.queues[queue].entered.store(job + 1, std::memory_order_release);
}

void flight_job_finished(int queue, std::uint64_t job) noexcept {
  FlightRecorder& r = flight_recorder();
  if (queue >= 0 && r.on.load(std::memory_order_relaxed)) r.queues[queue].completed.store(job + 1, std::memory_order_release);
}

namespace {
// "world", "hop(L)", "group(L)", "cross(L)" (the first that matches the members), or "split".
std::string comm_name(const Communicator& c) {
  const Topology& t = c.topology();
  const std::vector<int>& m = c.members();
  if (c.size() == 1) return flight_key::kSelf;
  if (c.size() == t.size()) return std::string(level_name(Level::world));
  const int me = m[c.rank()];
  using Members = std::vector<int> (Topology::*)(Level, int) const;
  const std::pair<const char*, Members> kinds[] = {{"hop", &Topology::hop_group}, {"group", &Topology::group}, {"cross", &Topology::cross_group}};
  for (const auto& [kind, members_of] : kinds)
    for (Level l : kAllLevels)
      if (t.fanout(l) > 1 && std::invoke(members_of, t, l, me) == m) return std::string(kind) + "(" + std::string(level_name(l)) + ")";
  return "split";
}

// The outermost level that separates two members ("self" for one member).
const char* comm_level(const Communicator& c) {
  if (c.size() == 1) return flight_key::kSelf;
  Level widest = Level::package;
  for (int i = 1; i < c.size(); ++i) widest = std::max(widest, c.topology().separating_level(c.world_rank(0), c.world_rank(i)));
  return level_name(widest).data();  // a string literal: NUL-terminated
}
}  // namespace

void Communicator::open_flight(const char* backend) {
  FlightRecorder& r = flight_recorder();
  std::lock_guard<std::mutex> lock(r.registering);
  const int id = r.num_comms.load(std::memory_order_relaxed);
  if (id == FlightRecorder::kMaxComms) return;  // past the table: not recorded
  FlightComm& c = r.comms[id];
  c.id = id;
  std::snprintf(c.name, sizeof c.name, "%s", comm_name(*this).c_str());
  c.level = comm_level(*this);
  c.backend = backend;
  c.members = std::make_unique<int[]>(members_.size());
  std::copy(members_.begin(), members_.end(), c.members.get());
  c.size = static_cast<int>(members_.size());
  r.num_comms.store(id + 1, std::memory_order_release);
  flight_ = &c;
}

int Communicator::flight_id() const { return flight_ ? flight_->id : -1; }

FlightMark Communicator::flight_begin(Collective op, std::size_t count, DType t) {
  FlightRecorder& r = flight_recorder();
  if (!flight_ || !r.on.load(std::memory_order_acquire)) return {};
  const FlightContext& ctx = flight_context();
  FlightEntry e;
  e.comm = flight_->id;
  e.seq = static_cast<std::int64_t>(flight_->entered.load(std::memory_order_relaxed) + 1);
  e.op = op, e.dtype = t, e.bits = ctx.bits;
  e.bytes = static_cast<std::int64_t>(op == Collective::all_to_allv ? static_cast<std::size_t>(size()) : count * dtype_size(t));
  e.queue = ctx.queue, e.job = static_cast<std::int64_t>(ctx.job);
  e.step = ctx.tag.step, e.micro = ctx.tag.micro, e.phase = ctx.tag.phase, e.unit = ctx.tag.unit;
  e.started_ns = flight_now_ns();
  e.queued_ns = ctx.queued_ns ? ctx.queued_ns : e.started_ns;
  FlightSlot* ring = r.ring.load(std::memory_order_acquire);
  const std::uint64_t capacity = r.capacity.load(std::memory_order_relaxed);
  const std::uint64_t ticket = r.next.fetch_add(1, std::memory_order_relaxed);
  ring[ticket % capacity].write(ticket, e);
  flight_->entered.store(static_cast<std::uint64_t>(e.seq), std::memory_order_release);
  return {flight_, static_cast<std::uint64_t>(e.seq), ticket};
}

void FlightMark::complete() noexcept {
  if (!comm) return;
  FlightRecorder& r = flight_recorder();
  if (FlightSlot* ring = r.ring.load(std::memory_order_acquire)) ring[ticket % r.capacity.load(std::memory_order_relaxed)].complete(ticket, flight_now_ns());
  std::uint64_t done = comm->completed.load(std::memory_order_relaxed);
  while (done < seq && !comm->completed.compare_exchange_weak(done, seq, std::memory_order_release)) {
  }
  comm = nullptr;
}

// --- starting ------------------------------------------------------------------------------------------------------

namespace {
// An id for the job: rank 0's start time, process id and host, in hex.
void make_job_id(char (&out)[40]) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::uint64_t h = std::hash<std::string>{}(host);
  std::snprintf(out, sizeof out, "%016llx-%llx", static_cast<unsigned long long>(flight_now_ns()),
                static_cast<unsigned long long>((h << 20) ^ static_cast<std::uint64_t>(getpid())));
}

// Removes the dumps an earlier job left (and their temporary files); "" or what went wrong.
std::string prepare_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ec.message();
  for (const fs::directory_entry& f : fs::directory_iterator(dir, ec)) {
    const std::string name = f.path().filename().string();
    if (name.rfind("rank-", 0) == 0 || name.rfind(".rank-", 0) == 0) fs::remove(f.path(), ec);
  }
  return ec ? ec.message() : "";
}

// The liveness ticker (flight_state.h): one thread per process, started
// with the first recorder and never stopped (it only reads the clock and
// stores three atomics). A gap between two readings far longer than its
// sleep means the whole process stood still.
void tick_forever() {
  FlightRecorder& r = flight_recorder();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(FlightRecorder::kTickNs));
    const std::int64_t now = flight_now_ns(), last = r.tick_ns.load(std::memory_order_relaxed);
    if (last != 0 && now - last >= FlightRecorder::kPauseNs) {
      r.pause_ns.store(now - last, std::memory_order_relaxed);
      r.pause_end_ns.store(now, std::memory_order_relaxed);
    }
    r.tick_ns.store(now, std::memory_order_release);  // after the pause: a dump never sees the tick without its pause
  }
}

void start_ticker() {
  FlightRecorder& r = flight_recorder();
  r.pause_ns.store(0), r.pause_end_ns.store(0);
  r.tick_ns.store(flight_now_ns());
  static const bool started = [] {
    std::thread(tick_forever).detach();
    return true;
  }();
  (void)started;
}

void set_text(char* out, std::size_t size, const std::string& text, const char* what) {
  TZ_CHECK(text.size() < size, ConfigError, std::string("the flight recorder's ") + what + " '" + text + "' is too long");
  std::memcpy(out, text.c_str(), text.size() + 1);
}
}  // namespace

void start_flight_recorder(Communicator& world, const FlightOptions& options) {
  FlightRecorder& r = flight_recorder();
  r.on.store(false, std::memory_order_release);
  const fs::path dir = options.dir.empty() ? fs::path() : fs::path(options.dir) / "flight";
  struct Message {
    char job[40];
    char problem[200];
  } msg{};
  if (world.rank() == 0) {
    make_job_id(msg.job);
    if (!dir.empty()) std::snprintf(msg.problem, sizeof msg.problem, "%s", prepare_folder(dir).c_str());
  }
  world.host().broadcast(&msg, sizeof msg, DType::u8, 0);
  TZ_CHECK(msg.problem[0] == 0, ConfigError, "cannot prepare the flight recorder's folder '" + dir.string() + "': " + msg.problem);
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);  // a rank on another node's local disk
  TZ_CHECK(!ec, ConfigError, "cannot create the flight recorder's folder '" + dir.string() + "': " + ec.message());
  r.rank = world.world_rank(world.rank());
  r.world = world.size();
  const std::string file = "rank-" + std::to_string(r.rank) + ".json";
  set_text(r.path, sizeof r.path, dir.empty() ? "" : (dir / file).string(), "dump path");
  set_text(r.tmp_path, sizeof r.tmp_path, dir.empty() ? "" : (dir / ("." + file + ".tmp")).string(), "dump path");
  std::memcpy(r.job, msg.job, sizeof r.job);
  set_text(r.topology, sizeof r.topology, world.topology().to_string(), "topology");
  r.failure_dumped.store(false);
  if (options.records == 0) return;
  // A ring replaced by a later start is kept: a thread or a handler may still hold it.
  static std::vector<std::unique_ptr<FlightSlot[]>> rings;
  rings.push_back(std::make_unique<FlightSlot[]>(options.records));
  r.capacity.store(options.records, std::memory_order_relaxed);
  r.next.store(0, std::memory_order_relaxed);
  r.ring.store(rings.back().get(), std::memory_order_release);
  start_ticker();
  r.on.store(true, std::memory_order_release);
}

bool flight_recording() { return flight_recorder().on.load(std::memory_order_relaxed); }

std::string flight_dump_path() { return flight_recorder().path; }

}  // namespace tierzero
