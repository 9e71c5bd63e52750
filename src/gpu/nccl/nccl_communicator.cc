#include <mpi.h>

#include <array>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "comm/comm_timeout.h"
#include "comm/mpi/mpi_communicator.h"
#include "gpu/nccl/nccl_api.h"
#include "gpu/nccl/nccl_reduction.h"
#include "gpu/device_mapping.h"
#include "tierzero/error.h"
#include "gpu/gpu_ops.h"
#include "tierzero/mpi.h"
#include "tierzero/nccl.h"

namespace tierzero {

namespace {
void check(ncclResult_t r, const char* what) {
  TZ_CHECK(r == ncclSuccess, CommError, std::string(what) + " failed: " + ncclGetErrorString(r));
}

void check_rt(cudaError_t e, const char* what) {
  TZ_CHECK(e == cudaSuccess, CommError, std::string(what) + " failed: " + cudaGetErrorString(e));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::bf16: return ncclBfloat16;
    case DType::f16: return ncclFloat16;
    case DType::i8: return ncclInt8;
    case DType::u8: return ncclUint8;
  }
  return ncclUint8;
}

// Every live NCCL communicator of the process, so that a timed-out wait
// can abort them all (no kernel is left waiting for a lost peer).
std::mutex g_live_mutex;
std::set<ncclComm_t> g_live;

void abort_every_comm() {
  std::lock_guard<std::mutex> lock(g_live_mutex);
  for (ncclComm_t c : g_live) ncclCommAbort(c);
  g_live.clear();
}

// Completes when the event recorded after the collective has fired. The
// wait polls the event and the communicator's asynchronous error (a peer
// that failed or vanished) under --comm-timeout, as NCCL's documentation
// recommends instead of a blocking synchronise. The collective's flight
// record is completed when the event is seen to have fired.
class EventRequest final : public Request::Impl {
 public:
  EventRequest(cudaEvent_t e, const Communicator* comm, ncclComm_t nccl, const char* what, FlightMark mark)
      : event_(e), comm_(comm), nccl_(nccl), what_(what), mark_(mark) {}
  void wait() override {
    wait_polling(*comm_, what_, [this] { return test(); }, [this] { return async_error(); }, abort_every_comm, Idle::sleep);
  }
  bool test() override {
    const cudaError_t e = cudaEventQuery(event_);
    if (e == cudaErrorNotReady) return false;
    check_rt(e, "event query");
    mark_.complete();
    return true;
  }
  Impl* move_to(void* where) noexcept override { return new (where) EventRequest(*this); }

 private:
  const char* async_error() const {
    ncclResult_t r = ncclSuccess;
    if (ncclCommGetAsyncError(nccl_, &r) != ncclSuccess) return "ncclCommGetAsyncError failed";
    return r == ncclSuccess || r == ncclInProgress ? nullptr : ncclGetErrorString(r);
  }
  cudaEvent_t event_;
  const Communicator* comm_;
  ncclComm_t nccl_;
  const char* what_;
  FlightMark mark_;
};

// `host`: the same members over MPI (host()), with the same Traffic counter.
class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, std::unique_ptr<Communicator> host, Topology topo, std::vector<int> members,
                   std::shared_ptr<Traffic> traffic)
      : Communicator(std::move(topo), std::move(members), std::move(traffic)), comm_(comm), host_(std::move(host)) {
    {
      std::lock_guard<std::mutex> lock(g_live_mutex);
      g_live.insert(comm_);
    }
    check(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
    check(ncclCommCount(comm_, &size_), "ncclCommCount");
    check_rt(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream create");
    for (auto& e : events_) check_rt(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event create");
    token_ = static_cast<float*>(gpu::device_allocate(sizeof(float), stream_));
    check_rt(cudaMemsetAsync(token_, 0, sizeof(float), stream_), "cudaMemsetAsync");
    check_rt(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    open_flight("nccl");
  }
  ~NcclCommunicator() override {
    gpu::device_release(token_, stream_);
    cudaStreamSynchronize(stream_);
    for (auto& e : events_) cudaEventDestroy(e);
    cudaStreamDestroy(stream_);
    std::lock_guard<std::mutex> lock(g_live_mutex);
    if (g_live.erase(comm_)) ncclCommDestroy(comm_);  // an aborted communicator is gone already
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Communicator& host() override { return *host_; }

  Request iall_gather(const void* send, void* recv, std::size_t count, DType t) override {
    count_from_each(count * dtype_size(t));
    const FlightMark mark = flight_begin(Collective::all_gather, count, t);
    check(ncclAllGather(send, recv, count, nccl_type(t), comm_, stream_), "ncclAllGather");
    return done("all_gather", mark);
  }
  Request ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override {
    count_from_each(count * dtype_size(t));
    const NcclReduction r = nccl_reduction(op, t);
    const FlightMark mark = flight_begin(Collective::reduce_scatter, count, t);
    check(ncclReduceScatter(send, recv, count, nccl_type(t), r.op, comm_, stream_), "ncclReduceScatter");
    if (r.divide_after) gpu::divide(recv, count, t, size_, stream_);
    return done("reduce_scatter", mark);
  }
  Request iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override {
    count_all_reduce(count, dtype_size(t));
    const NcclReduction r = nccl_reduction(op, t);
    const FlightMark mark = flight_begin(Collective::all_reduce, count, t);
    check(ncclAllReduce(send, recv, count, nccl_type(t), r.op, comm_, stream_), "ncclAllReduce");
    if (r.divide_after) gpu::divide(recv, count, t, size_, stream_);
    return done("all_reduce", mark);
  }
  Request iall_to_all(const void* send, void* recv, std::size_t count, DType t) override {
    std::vector<std::size_t> counts(size_, count), displs(size_);
    for (int j = 0; j < size_; ++j) displs[j] = j * count;
    const FlightMark mark = flight_begin(Collective::all_to_all, count, t);
    send_and_receive(send, counts, displs, recv, counts, displs, t);
    return done("all_to_all", mark);
  }
  Request iall_to_allv(const void* send, const std::vector<std::size_t>& send_counts, const std::vector<std::size_t>& send_displs,
                       void* recv, const std::vector<std::size_t>& recv_counts, const std::vector<std::size_t>& recv_displs,
                       DType t) override {
    const FlightMark mark = flight_begin(Collective::all_to_allv, 0, t);
    send_and_receive(send, send_counts, send_displs, recv, recv_counts, recv_displs, t);
    return done("all_to_allv", mark);
  }
  Request ibroadcast(void* buf, std::size_t count, DType t, int root) override {
    count_from(root, count * dtype_size(t));
    const FlightMark mark = flight_begin(Collective::broadcast, count, t);
    check(ncclBroadcast(buf, buf, count, nccl_type(t), root, comm_, stream_), "ncclBroadcast");
    return done("broadcast", mark);
  }
  void barrier() override {  // a one-element all-reduce completes only once every member has joined
    const FlightMark mark = flight_begin(Collective::barrier, 0, DType::u8);
    check(ncclAllReduce(token_, token_, 1, ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce");
    done("barrier", mark).wait();
  }
  std::unique_ptr<Communicator> split_by(int color) override {
    ncclComm_t sub;
    const int me = world_rank(rank_);
    check(ncclCommSplit(comm_, color, me, &sub, nullptr), "ncclCommSplit");
    int n = 0;
    check(ncclCommCount(sub, &n), "ncclCommCount");
    // The members' world ranks, gathered on the new communicator; every
    // copy on this communicator's stream (NCCL's runs non-blocking).
    auto* dev = static_cast<int*>(gpu::device_allocate(sizeof(int) * (n + 1), stream_));
    check_rt(cudaMemcpyAsync(dev, &me, sizeof(int), cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
    check(ncclAllGather(dev, dev + 1, 1, ncclInt32, sub, stream_), "ncclAllGather");
    std::vector<int> members(n);
    check_rt(cudaMemcpyAsync(members.data(), dev + 1, sizeof(int) * n, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
    check_rt(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    gpu::device_release(dev, stream_);
    auto host = host_->split_by(color);  // the MPI twin of the same group
    return std::make_unique<NcclCommunicator>(sub, std::move(host), topology(), std::move(members), shared_traffic());
  }

 private:
  // Grouped point-to-point sends and receives (NCCL has no all-to-all collective).
  void send_and_receive(const void* send, const std::vector<std::size_t>& send_counts, const std::vector<std::size_t>& send_displs,
                        void* recv, const std::vector<std::size_t>& recv_counts, const std::vector<std::size_t>& recv_displs, DType t) {
    const std::size_t es = dtype_size(t);
    check(ncclGroupStart(), "ncclGroupStart");
    for (int j = 0; j < size_; ++j) {
      count_from(j, recv_counts[j] * es);
      check(ncclSend(static_cast<const char*>(send) + send_displs[j] * es, send_counts[j], nccl_type(t), j, comm_, stream_), "ncclSend");
      check(ncclRecv(static_cast<char*>(recv) + recv_displs[j] * es, recv_counts[j], nccl_type(t), j, comm_, stream_), "ncclRecv");
    }
    check(ncclGroupEnd(), "ncclGroupEnd");
  }
  // Records the next event of a small ring on the stream; requests wait on it (and complete `mark`).
  Request done(const char* what, FlightMark mark) {
    cudaEvent_t e = events_[next_++ % events_.size()];
    check_rt(cudaEventRecord(e, stream_), "event record");
    return Request::make<EventRequest>(e, this, comm_, what, mark);
  }
  ncclComm_t comm_;
  std::unique_ptr<Communicator> host_;
  cudaStream_t stream_{};
  std::array<cudaEvent_t, 16> events_{};
  std::size_t next_ = 0;
  int rank_ = 0, size_ = 1;
  float* token_ = nullptr;  // barrier()'s device element
};
}  // namespace

void use_node_local_gpu() {
  int devices = 0;
  const cudaError_t found = cudaGetDeviceCount(&devices);
  TZ_CHECK(found == cudaSuccess && devices > 0, ConfigError,
           std::string("the NCCL communicator needs a GPU on every rank; CUDA says: ") +
               (found == cudaSuccess ? "no CUDA device" : cudaGetErrorString(found)));
  int rank = 0, local_rank = 0, local_ranks = 1;  // a world of one without MPI: rank 0 of 1 on its node
  if (mpi_initialized()) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_size(local, &local_ranks);
    MPI_Comm_free(&local);
  }
  gpu::use_device(gpu::node_local_device(local_rank, local_ranks, devices));
  check_rt(cudaSetDevice(gpu::current_device()), "cudaSetDevice");
}

std::unique_ptr<Communicator> nccl_world(const Topology& topology) {
  const bool mpi = mpi_initialized();  // without MPI: a world of one, its control values on self_world
  int rank = 0, size = 1;
  if (mpi) MPI_Comm_rank(MPI_COMM_WORLD, &rank), MPI_Comm_size(MPI_COMM_WORLD, &size);
  TZ_CHECK(topology.size() == size, TopologyError,
           "topology '" + topology.to_string() + "' has " + std::to_string(topology.size()) + " ranks but the job has " + std::to_string(size));
  use_node_local_gpu();
  ncclUniqueId id;
  if (rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  if (mpi) MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  check(ncclCommInitRank(&comm, size, id, rank), "ncclCommInitRank");
  std::vector<int> members(size);
  for (int i = 0; i < size; ++i) members[i] = i;
  auto traffic = std::make_shared<Traffic>();
  std::unique_ptr<Communicator> host;  // the control communicator
  if (mpi) {
    MPI_Comm twin;  // a duplicate, so its collectives never meet anyone else's
    MPI_Comm_dup(MPI_COMM_WORLD, &twin);
    host = std::make_unique<MpiCommunicator>(twin, topology, members, traffic);
  } else {
    host = self_world(topology, traffic);
  }
  return std::make_unique<NcclCommunicator>(comm, std::move(host), topology, std::move(members), traffic);
}

}  // namespace tierzero
