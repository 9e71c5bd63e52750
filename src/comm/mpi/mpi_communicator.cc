#include "comm/mpi/mpi_communicator.h"

#include "comm/comm_timeout.h"
#include "comm/mpi/mpi_types.h"
#include "tierzero/error.h"
#include "tierzero/mpi.h"

namespace tierzero {

namespace {
// What finishing a request still has to do: divide by the group size for avg.
struct Finish {
  void* buf = nullptr;
  std::size_t count = 0;
  DType type = DType::f32;
  int divisor = 0;  // 0: nothing to do
  void operator()() const {
    if (divisor) divide_elements(buf, count, type, divisor);
  }
};

// One outstanding MPI request and its flight record; alltoallv's count arrays travel with it.
class MpiRequest final : public Request::Impl {
 public:
  MpiRequest(MPI_Request r, const MpiCommunicator* comm, const char* what, FlightMark mark, Finish finish, std::vector<int> keep = {})
      : request_(r), comm_(comm), what_(what), mark_(mark), finish_(finish), keep_(std::move(keep)) {}
  void wait() override {
    if (done_) return;
    if (comm_timeout_s() <= 0) {
      mpi::check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    } else {  // MPI reports its failures through MPI_Test's return code (MPI_ERRORS_RETURN)
      wait_polling(*comm_, what_, [this] { return test_once(); }, [] { return static_cast<const char*>(nullptr); }, nullptr);
    }
    complete();
  }
  bool test() override {
    if (!done_ && test_once()) complete();
    return done_;
  }
  Impl* move_to(void* where) noexcept override { return new (where) MpiRequest(std::move(*this)); }

 private:
  bool test_once() {
    int flag = 0;
    mpi::check(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    return flag != 0;
  }
  void complete() {
    done_ = true;
    finish_();
    mark_.complete();
  }
  MPI_Request request_;
  const MpiCommunicator* comm_;
  const char* what_;
  FlightMark mark_;
  Finish finish_;
  std::vector<int> keep_;
  bool done_ = false;
};

Request make_request(MPI_Request r, const MpiCommunicator* c, const char* what, FlightMark mark, Finish finish = {},
                     std::vector<int> keep = {}) {
  return Request::make<MpiRequest>(r, c, what, mark, finish, std::move(keep));
}

Finish averaging(ReduceOp op, void* recv, std::size_t count, DType t, int size) {
  if (op != ReduceOp::avg) return {};
  TZ_CHECK(is_float(t), CommError, "avg reduction needs a float type, got " + std::string(dtype_name(t)));
  return Finish{recv, count, t, size};
}

const void* in_place(const void* send, const void* recv) { return send == recv ? MPI_IN_PLACE : send; }
}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, Topology topology, std::vector<int> members,
                                 std::shared_ptr<Traffic> traffic)
    : Communicator(std::move(topology), std::move(members), std::move(traffic)), comm_(comm) {
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  open_flight("mpi");
}

MpiCommunicator::~MpiCommunicator() {
  if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
}

Request MpiCommunicator::iall_gather(const void* send, void* recv, std::size_t count, DType t) {
  const int n = mpi::to_int(count, "all_gather");
  count_from_each(count * dtype_size(t));
  MPI_Request r;
  const void* src = send;
  if (send == static_cast<const char*>(recv) + rank_ * count * dtype_size(t)) src = MPI_IN_PLACE;
  const FlightMark mark = flight_begin(Collective::all_gather, count, t);
  mpi::check(MPI_Iallgather(src, n, mpi::datatype(t), recv, n, mpi::datatype(t), comm_, &r), "MPI_Iallgather");
  return make_request(r, this, "all_gather", mark);
}

Request MpiCommunicator::ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  const int n = mpi::to_int(count, "reduce_scatter");
  const Finish finish = averaging(op, recv, count, t, size_);
  count_from_each(count * dtype_size(t));
  MPI_Request r;
  const FlightMark mark = flight_begin(Collective::reduce_scatter, count, t);
  mpi::check(MPI_Ireduce_scatter_block(send, recv, n, mpi::datatype(t), mpi::sum_op(t), comm_, &r),
             "MPI_Ireduce_scatter_block");
  return make_request(r, this, "reduce_scatter", mark, finish);
}

Request MpiCommunicator::iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  const int n = mpi::to_int(count, "all_reduce");
  const Finish finish = averaging(op, recv, count, t, size_);
  count_all_reduce(count, dtype_size(t));
  MPI_Request r;
  const FlightMark mark = flight_begin(Collective::all_reduce, count, t);
  mpi::check(MPI_Iallreduce(in_place(send, recv), recv, n, mpi::datatype(t), mpi::sum_op(t), comm_, &r),
             "MPI_Iallreduce");
  return make_request(r, this, "all_reduce", mark, finish);
}

Request MpiCommunicator::iall_to_all(const void* send, void* recv, std::size_t count, DType t) {
  const int n = mpi::to_int(count, "all_to_all");
  count_from_each(count * dtype_size(t));
  MPI_Request r;
  const FlightMark mark = flight_begin(Collective::all_to_all, count, t);
  mpi::check(MPI_Ialltoall(send, n, mpi::datatype(t), recv, n, mpi::datatype(t), comm_, &r), "MPI_Ialltoall");
  return make_request(r, this, "all_to_all", mark);
}

Request MpiCommunicator::iall_to_allv(const void* send, const std::vector<std::size_t>& send_counts,
                                      const std::vector<std::size_t>& send_displs, void* recv,
                                      const std::vector<std::size_t>& recv_counts,
                                      const std::vector<std::size_t>& recv_displs, DType t) {
  const auto p = static_cast<std::size_t>(size_);
  TZ_CHECK(send_counts.size() == p && send_displs.size() == p && recv_counts.size() == p && recv_displs.size() == p,
           CommError, "all_to_allv: every count and displacement array needs size() entries");
  // One array: send counts, send displs, recv counts, recv displs.
  std::vector<int> v(4 * p);
  for (std::size_t j = 0; j < p; ++j) {
    v[j] = mpi::to_int(send_counts[j], "all_to_allv");
    v[p + j] = mpi::to_int(send_displs[j], "all_to_allv");
    v[2 * p + j] = mpi::to_int(recv_counts[j], "all_to_allv");
    v[3 * p + j] = mpi::to_int(recv_displs[j], "all_to_allv");
    count_from(static_cast<int>(j), recv_counts[j] * dtype_size(t));
  }
  MPI_Request r;
  const MPI_Datatype dt = mpi::datatype(t);
  const FlightMark mark = flight_begin(Collective::all_to_allv, 0, t);
  mpi::check(MPI_Ialltoallv(send, v.data(), v.data() + p, dt, recv, v.data() + 2 * p, v.data() + 3 * p, dt, comm_, &r),
             "MPI_Ialltoallv");
  return make_request(r, this, "all_to_allv", mark, {}, std::move(v));
}

Request MpiCommunicator::ibroadcast(void* buf, std::size_t count, DType t, int root) {
  TZ_CHECK(root >= 0 && root < size_, CommError, "broadcast: root " + std::to_string(root) + " out of range");
  const int n = mpi::to_int(count, "broadcast");
  count_from(root, count * dtype_size(t));
  MPI_Request r;
  const FlightMark mark = flight_begin(Collective::broadcast, count, t);
  mpi::check(MPI_Ibcast(buf, n, mpi::datatype(t), root, comm_, &r), "MPI_Ibcast");
  return make_request(r, this, "broadcast", mark);
}

void MpiCommunicator::barrier() {
  MPI_Request r;
  const FlightMark mark = flight_begin(Collective::barrier, 0, DType::u8);
  mpi::check(MPI_Ibarrier(comm_, &r), "MPI_Ibarrier");
  make_request(r, this, "barrier", mark).wait();
}

std::unique_ptr<Communicator> MpiCommunicator::split_by(int color) {
  MPI_Comm sub;
  const int me = world_rank(rank_);
  mpi::check(MPI_Comm_split(comm_, color, me, &sub), "MPI_Comm_split");
  int n = 0;
  MPI_Comm_size(sub, &n);
  std::vector<int> members(n);
  mpi::check(MPI_Allgather(&me, 1, MPI_INT, members.data(), 1, MPI_INT, sub), "MPI_Allgather");
  return std::make_unique<MpiCommunicator>(sub, topology(), std::move(members), shared_traffic());
}

}  // namespace tierzero
