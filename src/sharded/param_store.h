// Where one rank's working parameter shard lives (Plan::param_offload):
// the bytes of a ShardLayout (params, or the bwd_params copy) in the
// parameter dtype, unit by unit.
//   none  the backend's memory.
//   cpu   host memory (ZeRO-Offload's offload_param). On the CPU backend
//         this is the same memory and the same calls as none (a device
//         would copy each unit's shard up before gathering it); what
//         changes is where footprint() counts it. The GPU build refuses it.
//   nvme  a file in the placement's nvme_path (swap_file.h, ZeRO-Infinity):
//         a pass reads the units ahead, in its order, into the placement's
//         buffers (more than the prefetch depth); a write goes through a
//         buffer to the file.
// Reads come in passes (the fetcher's forward or backward over its units):
// begin_pass, then for each i unit(i) (blocks until the shard is there;
// valid until release(i)) and release(i), in order. Writes (the update, a
// checkpoint loaded, the hpZ copy filled in forward) are writable(u), fill
// it in the backend's memory, commit(u); the NVMe store takes them between
// passes only. One thread.
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
  // Sets the whole shard from host bytes (the layout's total elements).
  virtual void assign(const std::byte* shard) = 0;
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
// file it names): zeros in memory, unspecified in a file until assign(). Throws ConfigError for an offload this backend
// cannot do, or a directory that cannot hold the file.
std::unique_ptr<ParamStore> make_param_store(const OffloadPlacement& where, const ShardLayout& layout, DType dtype, Memory& mem,
                                             int rank);

}  // namespace tierzero
