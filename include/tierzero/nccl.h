// The NCCL/RCCL backend of Communicator (built with -DTZ_WITH_NCCL=ON):
// one rank per GPU, buffers in device memory, every collective issued on
// the communicator's own stream so it overlaps compute on other streams;
// a Request completes when the collective's event has fired. The world
// communicator is bootstrapped through MPI (rank 0's ncclUniqueId is
// broadcast); split_by uses ncclCommSplit. Buffers must be device memory
// that the caller's work has finished writing (tierzero/memory.h's fence).
// Not run yet on a GPU (issue 9).
#pragma once
#include <memory>

#include "tierzero/communicator.h"

namespace tierzero {

// One rank per GPU: this rank's GPU is its node-local rank modulo the
// node's devices; gpu::use_device makes every thread's GpuContext use it.
// Call before any GPU work of the process. Collective over MPI_COMM_WORLD;
// throws ConfigError when this rank has no GPU.
void use_node_local_gpu();

// Collective over MPI_COMM_WORLD: use_node_local_gpu(), then the NCCL
// world communicator on that GPU. Throws ConfigError when this rank has no
// GPU and CommError when NCCL fails.
std::unique_ptr<Communicator> nccl_world(const Topology& topology);

}  // namespace tierzero
