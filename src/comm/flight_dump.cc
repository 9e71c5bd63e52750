// flight_dump (tierzero/flight_recorder.h): the rank's dump as JSON,
// formatted with async-signal-safe code only (no allocation, no stdio, no
// locale) into a fixed buffer written out with write(2) as it fills, to a
// temporary file that is then renamed over DIR/flight/rank-R.json.
// docs/formats.md ("Flight recorder") describes the fields.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

void write_activity(Out& o, const FlightRecorder& r) {
  std::uint64_t v[4];
  r.activity.read(v);
  const auto what = static_cast<FlightActivity>(v[0] & 0xff);
  o << "\"activity\":{\"what\":\"" << flight_activity_name(what) << "\",\"unit\":" << static_cast<int>(static_cast<std::uint32_t>(v[0] >> 8)) - 1
    << ",\"step\":" << static_cast<std::int64_t>(v[1]) << ",\"micro\":" << static_cast<std::int64_t>(v[2])
    << ",\"since_ns\":" << static_cast<std::int64_t>(v[3]) << "}";
}

// The ticker's evidence (flight_state.h): its last reading and the latest long pause.
void write_liveness(Out& o, const FlightRecorder& r) {
  o << ",\"liveness\":{\"tick_interval_ns\":" << FlightRecorder::kTickNs << ",\"tick_ns\":" << r.tick_ns.load(std::memory_order_acquire)
    << ",\"pause_ns\":" << r.pause_ns.load(std::memory_order_relaxed) << ",\"pause_end_ns\":" << r.pause_end_ns.load(std::memory_order_relaxed)
    << "}";
}

void write_tables(Out& o, const FlightRecorder& r) {
  o << ",\"queues\":[";
  const int queues = r.num_queues.load(std::memory_order_acquire);
  for (int q = 0; q < queues; ++q)
    o << (q ? "," : "") << "{\"id\":" << q << ",\"entered\":" << r.queues[q].entered.load(std::memory_order_acquire)
      << ",\"completed\":" << r.queues[q].completed.load(std::memory_order_acquire) << "}";
  o << "],\"communicators\":[";
  const int comms = r.num_comms.load(std::memory_order_acquire);
  for (int i = 0; i < comms; ++i) {
    const FlightComm& c = r.comms[i];
    o << (i ? "," : "") << "{\"id\":" << c.id << ",\"name\":\"" << c.name << "\",\"level\":\"" << c.level << "\",\"backend\":\"" << c.backend
      << "\",\"members\":[";
    for (int m = 0; m < c.size; ++m) o << (m ? "," : "") << c.members[m];
    o << "],\"entered\":" << c.entered.load(std::memory_order_acquire) << ",\"completed\":" << c.completed.load(std::memory_order_acquire)
      << "}";
  }
  o << "]";
}

void write_records(Out& o, const FlightRecorder& r) {
  o << ",\"records\":[";
  const FlightSlot* ring = r.ring.load(std::memory_order_acquire);
  const std::uint64_t capacity = r.capacity.load(std::memory_order_relaxed);
  const std::uint64_t next = r.next.load(std::memory_order_acquire);
  bool first = true;
  for (std::uint64_t t = next > capacity ? next - capacity : 0; t < next; ++t) {
    std::uint64_t ticket = 0;
    FlightEntry e;
    if (!ring[t % capacity].read(ticket, e) || ticket != t) continue;  // being written, or already replaced
    o << (first ? "" : ",") << "\n{\"comm\":" << e.comm << ",\"seq\":" << e.seq << ",\"op\":\"" << collective_name(e.op)
      << "\",\"bytes\":" << e.bytes << ",\"dtype\":\"" << dtype_name(e.dtype) << "\",\"bits\":" << e.bits << ",\"queue\":" << e.queue
      << ",\"job\":" << e.job << ",\"step\":" << e.step << ",\"micro\":" << e.micro << ",\"phase\":\"" << flight_phase_name(e.phase)
      << "\",\"unit\":" << e.unit << ",\"queued_ns\":" << e.queued_ns << ",\"started_ns\":" << e.started_ns
      << ",\"completed_ns\":" << e.completed_ns << "}";
    first = false;
  }
  o << "]";
}

const char* kind_name(FlightDumpKind kind) { return kind == FlightDumpKind::failure ? "failure" : kind == FlightDumpKind::stop ? "stop" : "request"; }

bool write_dump(int fd, const FlightRecorder& r, const char* reason, FlightDumpKind kind) {
  Out o(fd);
  o << "{\"format\":\"tierzero-flight\",\"version\":1,\"minor\":1,\"job\":\"" << r.job << "\",\"world_size\":" << r.world << ",\"rank\":" << r.rank
    << ",\"topology\":\"" << r.topology << "\",\"reason\":\"" << reason << "\",\"kind\":\"" << kind_name(kind) << "\",\"time_ns\":" << flight_now_ns()
    << ",\"records_kept\":" << r.capacity.load(std::memory_order_relaxed) << ",\"records_total\":" << r.next.load(std::memory_order_acquire)
    << ",";
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
