// The NCCL/RCCL backend of Communicator (built with -DTZ_WITH_NCCL=ON):
// one rank per GPU, buffers in device memory, every collective issued on
// the communicator's own stream so it overlaps compute on other streams;
// a Request completes when the collective's event has fired, and waiting
// polls that event and ncclCommGetAsyncError under --comm-timeout (on
// expiry every NCCL communicator of the process is aborted and the job
// ends with exit code 3). The world communicator is bootstrapped through
// MPI (rank 0's ncclUniqueId is broadcast); split_by uses ncclCommSplit.
// host() is an MPI communicator over the same members (small host values
// travel on it). Buffers must be device memory that the caller's work has
// finished writing (core/memory.h's fence).
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
