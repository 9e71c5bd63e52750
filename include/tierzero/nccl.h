// The NCCL/RCCL backend of Communicator (built with -DTZ_WITH_NCCL=ON):
// one rank per GPU, buffers in device memory, every collective issued on
// the communicator's own stream so it overlaps compute on other streams;
// a Request completes when the collective's event has fired. The world
// communicator is bootstrapped through MPI (rank 0's ncclUniqueId is
// broadcast); split_by uses ncclCommSplit. Not run yet on a GPU (issue 9).
#pragma once
#include <memory>

#include "tierzero/communicator.h"

namespace tierzero {

// Collective over MPI_COMM_WORLD: creates the NCCL world communicator on the
// current device. Throws CommError when no GPU or NCCL is usable.
std::unique_ptr<Communicator> nccl_world(const Topology& topology);

}  // namespace tierzero
