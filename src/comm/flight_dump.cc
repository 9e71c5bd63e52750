// flight_dump (tierzero/flight_recorder.h): the rank's dump as JSON,
// formatted with async-signal-safe code only (no allocation, no stdio, no
// locale) into a fixed buffer written out with write(2) as it fills, to a
// temporary file that is then renamed over DIR/flight/rank-R.json.
// docs/formats.md ("Flight recorder") describes the fields.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "comm/flight_keys.h"
#include "comm/flight_state.h"

namespace tierzero {

namespace {

// Appends text and numbers to a buffer, writing it to `fd` whenever it fills.
class Out {
 public:
  explicit Out(int fd) : fd_(fd) {}
  Out& operator<<(const char* s) { return put(s, std::strlen(s)); }
  Out& operator<<(std::string_view s) { return put(s.data(), s.size()); }
  Out& operator<<(std::int64_t v) {
    char digits[24];
    int n = 0;
    std::uint64_t u = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    do digits[n++] = static_cast<char>('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0) digits[n++] = '-';
    char text[24];
    for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
    return put(text, static_cast<std::size_t>(n));
  }
  Out& operator<<(int v) { return *this << static_cast<std::int64_t>(v); }
  Out& operator<<(std::uint64_t v) { return *this << static_cast<std::int64_t>(v); }
  // Writes what is left; whether every write succeeded.
  bool finish() {
    flush();
    return ok_;
  }

 private:
  Out& put(const char* s, std::size_t n) {
    while (n > 0) {
      if (used_ == sizeof buf_) flush();
      const std::size_t k = n < sizeof buf_ - used_ ? n : sizeof buf_ - used_;
      std::memcpy(buf_ + used_, s, k);
      used_ += k, s += k, n -= k;
    }
    return *this;
  }
  void flush() {
    for (std::size_t at = 0; at < used_ && ok_;) {
      const ssize_t w = ::write(fd_, buf_ + at, used_ - at);
      if (w > 0) at += static_cast<std::size_t>(w);
      else if (w < 0 && errno == EINTR) continue;
      else ok_ = false;
    }
    used_ = 0;
  }
  int fd_;
  bool ok_ = true;
  std::size_t used_ = 0;
  char buf_[16384];
};

namespace fk = flight_key;

// `,"name":` before a value of an object; Open writes `{"name":` before its first.
struct Key {
  const char* name;
};
struct Open {
  const char* name;
};
// A string value, quoted.
struct Str {
  std::string_view text;
};
Out& operator<<(Out& o, Key k) { return o << ",\"" << k.name << "\":"; }
Out& operator<<(Out& o, Open k) { return o << "{\"" << k.name << "\":"; }
Out& operator<<(Out& o, Str s) { return o << "\"" << s.text << "\""; }

void write_activity(Out& o, const FlightRecorder& r) {
  std::uint64_t v[4];
  r.activity.read(v);
  const auto what = static_cast<FlightActivity>(v[0] & 0xff);
  o << Key{fk::kActivity} << Open{fk::kWhat} << Str{flight_activity_name(what)} << Key{fk::kUnit}
    << static_cast<int>(static_cast<std::uint32_t>(v[0] >> 8)) - 1 << Key{fk::kStep} << static_cast<std::int64_t>(v[1]) << Key{fk::kMicro}
    << static_cast<std::int64_t>(v[2]) << Key{fk::kSinceNs} << static_cast<std::int64_t>(v[3]) << "}";
}

// The ticker's evidence (flight_state.h): its last reading and the latest long pause.
void write_liveness(Out& o, const FlightRecorder& r) {
  o << Key{fk::kLiveness} << Open{fk::kTickIntervalNs} << FlightRecorder::kTickNs << Key{fk::kTickNs} << r.tick_ns.load(std::memory_order_acquire)
    << Key{fk::kPauseNs} << r.pause_ns.load(std::memory_order_relaxed) << Key{fk::kPauseEndNs} << r.pause_end_ns.load(std::memory_order_relaxed)
    << "}";
}

void write_tables(Out& o, const FlightRecorder& r) {
  o << Key{fk::kQueues} << "[";
  const int queues = r.num_queues.load(std::memory_order_acquire);
  for (int q = 0; q < queues; ++q)
    o << (q ? "," : "") << Open{fk::kId} << q << Key{fk::kEntered} << r.queues[q].entered.load(std::memory_order_acquire) << Key{fk::kCompleted}
      << r.queues[q].completed.load(std::memory_order_acquire) << "}";
  o << "]" << Key{fk::kCommunicators} << "[";
  const int comms = r.num_comms.load(std::memory_order_acquire);
  for (int i = 0; i < comms; ++i) {
    const FlightComm& c = r.comms[i];
    o << (i ? "," : "") << Open{fk::kId} << c.id << Key{fk::kName} << Str{c.name} << Key{fk::kLevel} << Str{c.level} << Key{fk::kBackend}
      << Str{c.backend} << Key{fk::kMembers} << "[";
    for (int m = 0; m < c.size; ++m) o << (m ? "," : "") << c.members[m];
    o << "]" << Key{fk::kEntered} << c.entered.load(std::memory_order_acquire) << Key{fk::kCompleted}
      << c.completed.load(std::memory_order_acquire) << "}";
  }
  o << "]";
}

void write_records(Out& o, const FlightRecorder& r) {
  o << Key{fk::kRecords} << "[";
  const FlightSlot* ring = r.ring.load(std::memory_order_acquire);
  const std::uint64_t capacity = r.capacity.load(std::memory_order_relaxed);
  const std::uint64_t next = r.next.load(std::memory_order_acquire);
  bool first = true;
  for (std::uint64_t t = next > capacity ? next - capacity : 0; t < next; ++t) {
    std::uint64_t ticket = 0;
    FlightEntry e;
    if (!ring[t % capacity].read(ticket, e) || ticket != t) continue;  // being written, or already replaced
    o << (first ? "" : ",") << "\n" << Open{fk::kComm} << e.comm << Key{fk::kSeq} << e.seq << Key{fk::kOp} << Str{collective_name(e.op)}
      << Key{fk::kBytes} << e.bytes << Key{fk::kDtype} << Str{dtype_name(e.dtype)} << Key{fk::kBits} << e.bits << Key{fk::kQueue} << e.queue
      << Key{fk::kJob} << e.job << Key{fk::kStep} << e.step << Key{fk::kMicro} << e.micro << Key{fk::kPhase} << Str{flight_phase_name(e.phase)}
      << Key{fk::kUnit} << e.unit << Key{fk::kQueuedNs} << e.queued_ns << Key{fk::kStartedNs} << e.started_ns << Key{fk::kCompletedNs}
      << e.completed_ns << "}";
    first = false;
  }
  o << "]";
}

const char* kind_name(FlightDumpKind kind) { return kind == FlightDumpKind::failure ? "failure" : kind == FlightDumpKind::stop ? "stop" : "request"; }

bool write_dump(int fd, const FlightRecorder& r, const char* reason, FlightDumpKind kind) {
  Out o(fd);
  o << Open{fk::kFormat} << Str{fk::kFormatName} << Key{fk::kVersion} << fk::kVersionNumber << Key{fk::kMinor} << fk::kMinorNumber << Key{fk::kJob} << Str{r.job}
    << Key{fk::kWorldSize} << r.world << Key{fk::kRank} << r.rank << Key{fk::kTopology} << Str{r.topology} << Key{fk::kReason} << Str{reason}
    << Key{fk::kKind} << Str{kind_name(kind)} << Key{fk::kTimeNs} << flight_now_ns() << Key{fk::kRecordsKept}
    << r.capacity.load(std::memory_order_relaxed) << Key{fk::kRecordsTotal} << r.next.load(std::memory_order_acquire);
  write_activity(o, r);
  write_liveness(o, r);
  write_tables(o, r);
  write_records(o, r);
  o << "}\n";
  return o.finish();
}

}  // namespace

bool flight_dump(const char* reason, FlightDumpKind kind) noexcept {
  FlightRecorder& r = flight_recorder();
  if (!r.on.load(std::memory_order_acquire) || r.path[0] == 0 || r.failure_dumped.load()) return false;
  if (r.dumping.exchange(true)) return false;  // another thread, or a handler that interrupted this one, is dumping
  const int saved_errno = errno;  // a signal handler must leave errno as it found it
  bool ok = false;
  if (!r.failure_dumped.load()) {
    const int fd = ::open(r.tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ok = write_dump(fd, r, reason, kind);
      ok = ::close(fd) == 0 && ok;
      ok = ok && ::rename(r.tmp_path, r.path) == 0;
      if (!ok) ::unlink(r.tmp_path);
    }
    if (ok && kind == FlightDumpKind::failure) r.failure_dumped.store(true);
  }
  r.dumping.store(false);
  errno = saved_errno;
  return ok;
}

}  // namespace tierzero
