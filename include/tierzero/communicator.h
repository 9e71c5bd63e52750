// The transport-independent collective interface. A Communicator is a fixed
// group of ranks inside a job whose world layout is a Topology; it knows the
// world rank of each member so that every collective can charge the bytes it
// delivers to the Traffic counter of the level they cross.
//
// Counting rule (docs/algorithms.md): the calling rank adds the bytes it
// receives from each peer, as if each piece came straight from the rank that
// owns it, whatever the backend does inside:
//   all_gather      chunk j from member j
//   reduce_scatter  my chunk of member j's input, from member j
//   all_reduce      reduce_scatter + all_gather over a near-even split of the
//                   count into size() chunks (the bandwidth-optimal schedule)
//   all_to_all(v)   the block member j addresses to me, from member j
//   broadcast       the whole buffer from the root
//
// Threading: one thread may issue collectives on a communicator at a time;
// collectives must be issued in the same order on every member, and a rank
// that uses several communicators must interleave them alike on every rank
// (the engine issues everything through one CommSchedule for this). Objects are
// owned by whoever created them; split() results are independent objects.
//
// Every backend (MPI, NCCL, the world of one) records each collective it
// posts in the rank's flight recorder (tierzero/flight_recorder.h), the
// same fields whatever the transport.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <cstddef>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <memory>
#include <vector>

#include "tierzero/dtype.h"
#include "tierzero/topology.h"

namespace tierzero {

// Per-level byte counters. A collective adds, for the calling rank, the bytes
// it receives from each peer, attributed to the outermost level that
// separates the two ranks (Topology::separating_level). Shared by a world
// communicator and every communicator split from it; safe to update from
// several threads.
class Traffic {
 public:
  void add(Level level, std::uint64_t bytes) { bytes_[static_cast<int>(level)].fetch_add(bytes, std::memory_order_relaxed); }
  std::uint64_t bytes(Level level) const { return bytes_[static_cast<int>(level)].load(std::memory_order_relaxed); }
  std::array<std::uint64_t, kNumLevels> snapshot() const;
  std::uint64_t total() const;
  void reset();

 private:
  std::array<std::atomic<std::uint64_t>, kNumLevels> bytes_{};
};

// Difference of two snapshots (after - before), per level.
std::array<std::uint64_t, kNumLevels> traffic_delta(const std::array<std::uint64_t, kNumLevels>& before,
                                                    const std::array<std::uint64_t, kNumLevels>& after);

enum class ReduceOp { sum, avg };

// How the order checker and the flight recorder name one collective a rank issued: "all_gather on communicator 3
// (1024 bytes)", with " of bf16" after the bytes when `dtype` is given.
std::string describe_collective(std::uint64_t comm, Collective c, std::uint64_t bytes, std::string_view dtype = {});

struct FlightComm;  // a communicator's place in the flight recorder (src/comm/flight_state.h)

// One collective's record in the rank's flight recorder, kept by its
// Request: complete() stamps the completion (once; a no-op for an empty
// mark, e.g. with the recorder off).
struct FlightMark {
  FlightComm* comm = nullptr;
  std::uint64_t seq = 0;     // the collective's number on its communicator (1, 2, ...)
  std::uint64_t ticket = 0;  // the record's number in the rank's ring
  void complete() noexcept;
};

// A waitable handle for a non-blocking collective. Move-only; wait() is
// idempotent; destroying an unfinished request waits for it. The backend's
// state lives inside the handle (no heap allocation per collective).
class Request {
 public:
  struct Impl {
    virtual ~Impl() = default;
    virtual void wait() = 0;
    virtual bool test() = 0;
    // Moves this object into `where` (kStorage bytes, suitably aligned).
    virtual Impl* move_to(void* where) noexcept = 0;
  };
  static constexpr std::size_t kStorage = 128;

  Request() = default;
  // Constructs the backend's Impl in place.
  template <class T, class... Args>
  static Request make(Args&&... args) {
    static_assert(sizeof(T) <= kStorage && alignof(T) <= alignof(std::max_align_t), "Request storage too small");
    Request r;
    r.impl_ = new (r.storage_) T(std::forward<Args>(args)...);
    return r;
  }
  Request(Request&& o) noexcept;
  Request& operator=(Request&& o) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request();
  void wait();
  // True when the operation has completed (then wait() returns at once).
  bool test();

 private:
  void reset() noexcept;
  alignas(std::max_align_t) unsigned char storage_[kStorage];
  Impl* impl_ = nullptr;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The world rank of member i.
  int world_rank(int member) const { return members_[member]; }
  const std::vector<int>& members() const { return members_; }
  const Topology& topology() const { return topology_; }
  Traffic& traffic() const { return *traffic_; }
  // The counter, shared with every communicator split from this one.
  std::shared_ptr<Traffic> shared_traffic() const { return traffic_; }
  // This communicator's number in the flight recorder's table (its creation
  // order on this rank, the same on every rank), or -1 when it posts no
  // collectives itself (a wrapper such as the order checker's).
  int flight_id() const;

  // recv (size()*count elements) = concatenation of every member's send (count).
  virtual Request iall_gather(const void* send, void* recv, std::size_t count, DType t) = 0;
  // recv (count) = reduction over members of their send[rank*count .. +count].
  virtual Request ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) = 0;
  // buf (count) = reduction over members of their buf; send may equal recv.
  virtual Request iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) = 0;
  // recv[j*count..] = member j's send[rank*count..].
  virtual Request iall_to_all(const void* send, void* recv, std::size_t count, DType t) = 0;
  // Variable block sizes and displacements, in elements.
  virtual Request iall_to_allv(const void* send, const std::vector<std::size_t>& send_counts,
                               const std::vector<std::size_t>& send_displs, void* recv,
                               const std::vector<std::size_t>& recv_counts,
                               const std::vector<std::size_t>& recv_displs, DType t) = 0;
  virtual Request ibroadcast(void* buf, std::size_t count, DType t, int root) = 0;
  virtual void barrier() = 0;

  void all_gather(const void* send, void* recv, std::size_t count, DType t) { iall_gather(send, recv, count, t).wait(); }
  void reduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
    ireduce_scatter(send, recv, count, t, op).wait();
  }
  void all_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
    iall_reduce(send, recv, count, t, op).wait();
  }
  void all_to_all(const void* send, void* recv, std::size_t count, DType t) { iall_to_all(send, recv, count, t).wait(); }
  void broadcast(void* buf, std::size_t count, DType t, int root) { ibroadcast(buf, count, t, root).wait(); }

  // A communicator over the same members whose collectives read and write
  // host memory: this one where it does (MPI); the NCCL communicator's MPI
  // twin. Small control values (loss, norm, checkpoint status) travel on it.
  virtual Communicator& host() { return *this; }

  // A new communicator over the members that share this rank's `color`,
  // ordered by world rank. Collective over all members.
  virtual std::unique_ptr<Communicator> split_by(int color) = 0;
  // group(level) / cross group(level) / hop group(level) (docs/architecture.md),
  // intersected with this communicator's members.
  std::unique_ptr<Communicator> split(Level level);
  std::unique_ptr<Communicator> cross(Level level);
  std::unique_ptr<Communicator> hop(Level level);

 protected:
  Communicator(Topology topology, std::vector<int> members, std::shared_ptr<Traffic> traffic);
  // Charges `bytes` received from member `peer` (no-op for self).
  void count_from(int peer, std::size_t bytes) const;
  // The counting rules above, for this rank.
  // all_gather, reduce_scatter and all_to_all: `bytes` from every peer.
  void count_from_each(std::size_t bytes) const;
  void count_all_reduce(std::size_t count, std::size_t elem_size) const;
  // Flight recording: a backend that posts collectives itself calls
  // open_flight() once in its constructor (`backend`: "mpi", "nccl",
  // "self"), which gives it the next place in the recorder's table, and
  // flight_begin() as it posts each collective; the returned mark goes
  // into the Request, which completes it.
  void open_flight(const char* backend);
  FlightMark flight_begin(Collective c, std::size_t count, DType t);

 private:
  Topology topology_;
  std::vector<int> members_;
  std::shared_ptr<Traffic> traffic_;
  FlightComm* flight_ = nullptr;
};

// A world of one without any transport: every collective is a copy of the
// member's own host memory, complete when the call returns; split_by gives
// another such world. What a process not started by an MPI launcher uses
// (tierzero/mpi.h's mpi_world), e.g. a single-GPU run without mpirun.
// Counts into `traffic` (a fresh counter when null). Throws TopologyError
// unless `topology` has one rank.
std::unique_ptr<Communicator> self_world(const Topology& topology, std::shared_ptr<Traffic> traffic = nullptr);

// Splits `count` elements into `parts` near-equal chunks (the first count%parts
// one longer); returns the size of chunk i.
inline std::size_t even_chunk(std::size_t count, int parts, int i) {
  return count / parts + (static_cast<std::size_t>(i) < count % parts ? 1 : 0);
}

}  // namespace tierzero
