// The optimizer shard in a file (Plan::optim_offload nvme, ZeRO-Infinity's
// NVMe offload): one swap file per rank in its nvme_path (swap_file.h).
// Each unit's master, m and v lie together in one block padded to 4 KiB,
// read and written whole. The update cycles the placement's buffers (host
// memory): while unit u is updated on the training thread, the file's I/O
// thread writes unit u-1 back and reads unit u+1 (more buffers read
// further ahead). The arithmetic is the host's AdamW (tierzero/optim.h),
// the same as the in-memory store's; on a device each unit's gradient
// comes down and its master goes up (host_staging.h).
#pragma once
#include <memory>
#include <vector>

#include "sharded/optim_store.h"

namespace tierzero {

// Throws ConfigError when the directory cannot hold the file (naming it).
std::unique_ptr<OptimStore> make_nvme_store(const Plan& plan, const ShardLayout& optim, const std::vector<ShardSegment>& segments,
                                            Memory& mem, int rank);

}  // namespace tierzero
