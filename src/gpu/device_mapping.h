// Which GPU a rank drives: one rank per GPU, picked by the rank's index
// among the ranks of its node. Plain arithmetic (no CUDA), so the CPU
// tests check it (tests/device_mapping_test.cc).
#pragma once
#include <string>

#include "tierzero/error.h"

namespace tierzero::gpu {

// The device of the node-local rank `local_rank` of `local_ranks` ranks on
// a node with `devices` GPUs. More ranks than GPUs is a ConfigError naming
// both counts: two ranks on one GPU make NCCL fail ("invalid usage").
inline int node_local_device(int local_rank, int local_ranks, int devices) {
  TZ_CHECK(devices > 0, ConfigError, "no CUDA device on this node");
  TZ_CHECK(local_ranks <= devices, ConfigError,
           std::to_string(local_ranks) + " ranks on this node but " + std::to_string(devices) +
               " GPU" + (devices == 1 ? "" : "s") + ": tierzero runs one rank per GPU (start at most " + std::to_string(devices) +
               " ranks per node, e.g. mpirun --npernode " + std::to_string(devices) + ")");
  TZ_CHECK(local_rank >= 0 && local_rank < local_ranks, ConfigError,
           "node-local rank " + std::to_string(local_rank) + " is outside 0.." + std::to_string(local_ranks - 1));
  return local_rank;
}

}  // namespace tierzero::gpu
