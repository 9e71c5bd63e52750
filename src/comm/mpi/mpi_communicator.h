// Communicator over an MPI communicator (Open MPI). Owns the MPI_Comm it was
// given (freed on destruction) except MPI_COMM_WORLD.
#pragma once
#include <mpi.h>

#include "tierzero/communicator.h"

namespace tierzero {

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, Topology topology, std::vector<int> members, std::shared_ptr<Traffic> traffic);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Request iall_gather(const void* send, void* recv, std::size_t count, DType t) override;
  Request ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override;
  Request iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override;
  Request iall_to_all(const void* send, void* recv, std::size_t count, DType t) override;
  Request iall_to_allv(const void* send, const std::vector<std::size_t>& send_counts,
                       const std::vector<std::size_t>& send_displs, void* recv,
                       const std::vector<std::size_t>& recv_counts, const std::vector<std::size_t>& recv_displs,
                       DType t) override;
  Request ibroadcast(void* buf, std::size_t count, DType t, int root) override;
  void barrier() override;
  std::unique_ptr<Communicator> split_by(int color) override;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace tierzero
