#include <mpi.h>

#include <array>
#include <string>
#include <vector>

#include "comm/nccl/nccl_api.h"
#include "tierzero/error.h"
#include "tierzero/gpu_backend.h"
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

ncclRedOp_t nccl_op(ReduceOp op, DType t) {
  TZ_CHECK(op != ReduceOp::avg || is_float(t), CommError, "avg reduction needs a float type");
  return op == ReduceOp::avg ? ncclAvg : ncclSum;
}

// Completes when the event recorded after the collective has fired.
class EventRequest final : public Request::Impl {
 public:
  explicit EventRequest(cudaEvent_t e) : event_(e) {}
  void wait() override { check_rt(cudaEventSynchronize(event_), "event synchronize"); }
  bool test() override { return cudaEventQuery(event_) == cudaSuccess; }
  Impl* move_to(void* where) noexcept override { return new (where) EventRequest(*this); }

 private:
  cudaEvent_t event_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, Topology topo, std::vector<int> members, std::shared_ptr<Traffic> traffic)
      : Communicator(std::move(topo), std::move(members), std::move(traffic)), comm_(comm) {
    check(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
    check(ncclCommCount(comm_, &size_), "ncclCommCount");
    check_rt(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream create");
    for (auto& e : events_) check_rt(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event create");
    check_rt(cudaMalloc(&token_, sizeof(float)), "cudaMalloc");
    check_rt(cudaMemset(token_, 0, sizeof(float)), "cudaMemset");
  }
  ~NcclCommunicator() override {
    cudaFree(token_);
    for (auto& e : events_) cudaEventDestroy(e);
    cudaStreamDestroy(stream_);
    ncclCommDestroy(comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Request iall_gather(const void* send, void* recv, std::size_t count, DType t) override {
    count_from_each(count * dtype_size(t));
    check(ncclAllGather(send, recv, count, nccl_type(t), comm_, stream_), "ncclAllGather");
    return done();
  }
  Request ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override {
    count_from_each(count * dtype_size(t));
    check(ncclReduceScatter(send, recv, count, nccl_type(t), nccl_op(op, t), comm_, stream_), "ncclReduceScatter");
    return done();
  }
  Request iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override {
    count_all_reduce(count, dtype_size(t));
    check(ncclAllReduce(send, recv, count, nccl_type(t), nccl_op(op, t), comm_, stream_), "ncclAllReduce");
    return done();
  }
  Request iall_to_all(const void* send, void* recv, std::size_t count, DType t) override {
    std::vector<std::size_t> counts(size_, count), displs(size_);
    for (int j = 0; j < size_; ++j) displs[j] = j * count;
    return iall_to_allv(send, counts, displs, recv, counts, displs, t);
  }
  Request iall_to_allv(const void* send, const std::vector<std::size_t>& send_counts, const std::vector<std::size_t>& send_displs,
                       void* recv, const std::vector<std::size_t>& recv_counts, const std::vector<std::size_t>& recv_displs,
                       DType t) override {
    const std::size_t es = dtype_size(t);
    check(ncclGroupStart(), "ncclGroupStart");
    for (int j = 0; j < size_; ++j) {  // grouped point-to-point: NCCL has no all-to-all collective
      count_from(j, recv_counts[j] * es);
      check(ncclSend(static_cast<const char*>(send) + send_displs[j] * es, send_counts[j], nccl_type(t), j, comm_, stream_), "ncclSend");
      check(ncclRecv(static_cast<char*>(recv) + recv_displs[j] * es, recv_counts[j], nccl_type(t), j, comm_, stream_), "ncclRecv");
    }
    check(ncclGroupEnd(), "ncclGroupEnd");
    return done();
  }
  Request ibroadcast(void* buf, std::size_t count, DType t, int root) override {
    count_from(root, count * dtype_size(t));
    check(ncclBroadcast(buf, buf, count, nccl_type(t), root, comm_, stream_), "ncclBroadcast");
    return done();
  }
  void barrier() override {  // a one-element all-reduce completes only once every member has joined
    check(ncclAllReduce(token_, token_, 1, ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce");
    done().wait();
  }
  std::unique_ptr<Communicator> split_by(int color) override {
    ncclComm_t sub;
    const int me = world_rank(rank_);
    check(ncclCommSplit(comm_, color, me, &sub, nullptr), "ncclCommSplit");
    int n = 0;
    check(ncclCommCount(sub, &n), "ncclCommCount");
    // The members' world ranks, gathered on the new communicator.
    int* dev = nullptr;
    check_rt(cudaMalloc(&dev, sizeof(int) * (n + 1)), "cudaMalloc");
    check_rt(cudaMemcpy(dev, &me, sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(ncclAllGather(dev, dev + 1, 1, ncclInt32, sub, stream_), "ncclAllGather");
    check_rt(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    std::vector<int> members(n);
    check_rt(cudaMemcpy(members.data(), dev + 1, sizeof(int) * n, cudaMemcpyDeviceToHost), "cudaMemcpy");
    cudaFree(dev);
    return std::make_unique<NcclCommunicator>(sub, topology(), std::move(members), shared_traffic());
  }

 private:
  // Records the next event of a small ring on the stream; requests wait on it.
  Request done() {
    cudaEvent_t e = events_[next_++ % events_.size()];
    check_rt(cudaEventRecord(e, stream_), "event record");
    return Request::make<EventRequest>(e);
  }
  ncclComm_t comm_;
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
  int rank = 0, local_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_free(&local);
  gpu::use_device(local_rank % devices);
  check_rt(cudaSetDevice(gpu::current_device()), "cudaSetDevice");
}

std::unique_ptr<Communicator> nccl_world(const Topology& topology) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  TZ_CHECK(topology.size() == size, TopologyError,
           "topology '" + topology.to_string() + "' has " + std::to_string(topology.size()) + " ranks but the job has " + std::to_string(size));
  use_node_local_gpu();
  ncclUniqueId id;
  if (rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  check(ncclCommInitRank(&comm, size, id, rank), "ncclCommInitRank");
  std::vector<int> members(size);
  for (int i = 0; i < size; ++i) members[i] = i;
  return std::make_unique<NcclCommunicator>(comm, topology, std::move(members), std::make_shared<Traffic>());
}

}  // namespace tierzero
