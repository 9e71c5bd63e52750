// The optimizer shard in a file (Plan::optim_offload nvme, ZeRO-Infinity's
// NVMe offload): one swap file per rank in Plan::nvme_path, unlinked as
// soon as it is open, so a killed run leaves nothing behind (checkpoints,
// not this file, are the run's state). Each unit's master, m and v lie
// together in one block padded to 4 KiB; blocks are read and written whole
// with O_DIRECT where the filesystem allows it (page-aligned buffers, no
// copy into the page cache), else through the page cache. The update
// cycles Plan::nvme_buffers host buffers: while unit u is updated on the
// training thread, an I/O thread writes unit u-1 back and reads unit u+1
// (more buffers read further ahead). The arithmetic is the host's AdamW
// (tierzero/optim.h), the same as the in-memory store's on the CPU.
#pragma once
#include <memory>
#include <vector>

#include "sharded/optim_store.h"

namespace tierzero {

// Throws ConfigError when the directory cannot hold the file (naming it).
std::unique_ptr<OptimStore> make_nvme_store(const Plan& plan, const ShardLayout& optim, const std::vector<ShardSegment>& segments, int rank);

}  // namespace tierzero
