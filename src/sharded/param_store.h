// Where one rank's working parameter shard lives (Plan::param_offload):
// the bytes of a ShardLayout (params, or the bwd_params copy) in the
// parameter dtype, unit by unit.
//   none  the backend's memory.
//   cpu   host memory (ZeRO-Offload's offload_param). On a device each
//         unit's shard is uploaded when the pass reaches it, into one of
//         prefetch + 1 staging buffers, and a write is downloaded
//         (host_staging.h); on the CPU backend, whose memory that is,
//         nothing is copied and only where footprint() counts it changes.
//   nvme  a file in the placement's nvme_path (swap_file.h, ZeRO-Infinity):
//         a pass reads the units ahead, in its order, into the placement's
//         buffers (more than the prefetch depth); a write goes through a
//         buffer to the file; staged like cpu on a device.
// Reads come in passes (the fetcher's forward or backward over its units):
// begin_pass, then for each i unit(i) (blocks until the shard is there;
// valid until release(i)) and release(i), in order. Writes (the update,
// weights or a checkpoint loaded unit by unit, the hpZ copy filled in
// forward) are writable(u), fill it in the backend's memory, commit(u); the
// NVMe store takes them between passes only. One thread.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "core/memory.h"
#include "plan/shard_layout.h"
#include "sharded/footprint.h"
#include "tierzero/dtype.h"
#include "tierzero/plan.h"

namespace tierzero {

class ParamStore {
 public:
  virtual ~ParamStore() = default;
  // Copies the whole shard into host bytes.
  virtual void read(std::byte* shard) = 0;
  virtual void begin_pass(const std::vector<int>& units) = 0;
  // The i-th unit of the pass: its shard (layout.shard[u] elements).
  virtual const std::byte* unit(std::size_t i) = 0;
  virtual void release(std::size_t i) = 0;
  virtual std::byte* writable(int u) = 0;
  virtual void commit(int u) = 0;
  virtual StateFootprint footprint() const = 0;
};

// The store `where` asks for, for this rank (world rank `rank`, whose swap
// file it names), for passes that hold at most prefetch + 1 units at once:
// zeros in memory, unspecified in a file until each unit is written. Throws ConfigError
// for a directory that cannot hold the file.
std::unique_ptr<ParamStore> make_param_store(const OffloadPlacement& where, const ShardLayout& layout, DType dtype, Memory& mem,
                                             int prefetch, int rank);

}  // namespace tierzero
