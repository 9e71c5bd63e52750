// A parameter shard in a file (Plan::param_offload nvme, ZeRO-Infinity's
// parameter offload): one swap file per rank in the placement's nvme_path
// (swap_file.h), each unit's shard in one block padded to 4 KiB, read and
// written whole through the placement's page-aligned host buffers. A pass
// keeps every buffer busy: begin_pass reads its first units ahead, and
// release(i) starts the read of the unit that many places later into the
// buffer unit i used, while the training thread computes. A write takes
// the next buffer once its last read or write is done. On a device a
// unit read is uploaded into one of `slots` staging buffers and a write
// comes down through one more (host_staging.h).
#pragma once
#include <memory>

#include "sharded/param_store.h"

namespace tierzero {

// Throws ConfigError when the directory cannot hold the file (naming it).
std::unique_ptr<ParamStore> make_nvme_param_store(const OffloadPlacement& where, const ShardLayout& layout, DType dtype, Memory& mem,
                                                  std::size_t slots, int rank);

}  // namespace tierzero
