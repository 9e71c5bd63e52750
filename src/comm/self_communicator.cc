// A world of one (tierzero/communicator.h, self_world): the collectives of a
// single member over host memory are copies, done before the call returns.
#include <cstring>

#include "tierzero/communicator.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {
class DoneRequest final : public Request::Impl {
 public:
  void wait() override {}
  bool test() override { return true; }
  Impl* move_to(void* where) noexcept override { return new (where) DoneRequest(*this); }
};

// memmove: a member's send and receive buffers may be the same or overlap.
void copy(void* to, const void* from, std::size_t bytes) {
  if (bytes && to != from) std::memmove(to, from, bytes);
}

class SelfCommunicator final : public Communicator {
 public:
  SelfCommunicator(Topology topo, std::vector<int> members, std::shared_ptr<Traffic> traffic)
      : Communicator(std::move(topo), std::move(members), std::move(traffic)) {
    open_flight("self");
  }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Request iall_gather(const void* send, void* recv, std::size_t count, DType t) override {
    return done(Collective::all_gather, recv, send, count * dtype_size(t), t);
  }
  // The sum over one member, divided by one for avg: the member's own values.
  Request ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override {
    check(op, t);
    return done(Collective::reduce_scatter, recv, send, count * dtype_size(t), t);
  }
  Request iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override {
    check(op, t);
    return done(Collective::all_reduce, recv, send, count * dtype_size(t), t);
  }
  Request iall_to_all(const void* send, void* recv, std::size_t count, DType t) override {
    return done(Collective::all_to_all, recv, send, count * dtype_size(t), t);
  }
  Request iall_to_allv(const void* send, const std::vector<std::size_t>& send_counts, const std::vector<std::size_t>& send_displs,
                       void* recv, const std::vector<std::size_t>& recv_counts, const std::vector<std::size_t>& recv_displs,
                       DType t) override {
    TZ_CHECK(send_counts.size() == 1 && send_displs.size() == 1 && recv_counts.size() == 1 && recv_displs.size() == 1, CommError,
             "all_to_allv on a world of one takes one count and displacement per side");
    TZ_CHECK(send_counts[0] == recv_counts[0], CommError, "all_to_allv: this member sends itself a count it does not receive");
    const std::size_t es = dtype_size(t);
    return done(Collective::all_to_allv, static_cast<char*>(recv) + recv_displs[0] * es, static_cast<const char*>(send) + send_displs[0] * es,
                recv_counts[0] * es, t);
  }
  Request ibroadcast(void*, std::size_t count, DType t, int root) override {
    TZ_CHECK(root == 0, CommError, "broadcast from member " + std::to_string(root) + " of a world of one");
    return done(Collective::broadcast, nullptr, nullptr, count * dtype_size(t), t);
  }
  void barrier() override { done(Collective::barrier, nullptr, nullptr, 0, DType::u8); }
  std::unique_ptr<Communicator> split_by(int) override {
    return std::make_unique<SelfCommunicator>(topology(), members(), shared_traffic());
  }

 private:
  static void check(ReduceOp op, DType t) {
    TZ_CHECK(op != ReduceOp::avg || is_float(t), CommError, "avg reduction needs a float type");
  }
  // The copy, recorded in the flight recorder as a collective that completed at once.
  Request done(Collective op, void* to, const void* from, std::size_t bytes, DType t) {
    FlightMark mark = flight_begin(op, bytes / dtype_size(t), t);
    if (to) copy(to, from, bytes);
    mark.complete();
    return Request::make<DoneRequest>();
  }
};
}  // namespace

std::unique_ptr<Communicator> self_world(const Topology& topology, std::shared_ptr<Traffic> traffic) {
  TZ_CHECK(topology.size() == 1, TopologyError,
           "topology '" + topology.to_string() + "' has " + std::to_string(topology.size()) +
               " ranks, but this process was not started by an MPI launcher (mpirun, mpiexec, srun): it is a world of one");
  return std::make_unique<SelfCommunicator>(topology, std::vector<int>{0}, traffic ? std::move(traffic) : std::make_shared<Traffic>());
}

}  // namespace tierzero
