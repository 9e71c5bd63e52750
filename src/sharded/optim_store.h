// Where one rank's optimizer shard lives (Plan::optim_offload.device) and the
// AdamW update over it. The shard is three arrays of ShardLayout::total
// floats (fp32 master weights, AdamW's m and v), laid out unit by unit as
// the optim ShardLayout says.
//   none  the backend's memory; the update runs there (StepOps).
//   cpu   host memory; the update runs on the host (optim.h's AdamW, the
//         bits of every backend's), unit by unit: on a device each unit's
//         gradient is downloaded and its new master uploaded for
//         `updated` (host_staging.h); on the CPU backend, whose memory
//         that is, nothing is copied and only where memory_bytes counts it
//         changes.
//   nvme  a file in its nvme_path (nvme_store.h), streamed through host
//         buffers unit by unit during the update, staged like cpu.
// The engine (sharded_trainer.cc) owns one; calls come from its training
// thread.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "backend/backend_impl.h"
#include "core/memory.h"
#include "sharded/footprint.h"
#include "plan/shard_layout.h"
#include "tierzero/optim.h"

namespace tierzero {

class OptimStore {
 public:
  virtual ~OptimStore() = default;
  // Sets unit u's shard (ShardLayout::shard[u] elements of each) from host
  // arrays: initial weights, a checkpoint, loaded unit by unit.
  virtual void assign_unit(int u, const float* master, const float* m, const float* v) = 0;
  // Copies the shard into host arrays (a checkpoint, the full weights).
  virtual void read(float* master, float* m, float* v) = 0;
  // One AdamW update (step t, learning rate lr) of every tensor segment of
  // the shard with `grads` (the backend's memory, the optim layout,
  // already scaled), then updated(unit, master) for every unit in order,
  // with the unit's new fp32 master in the backend's memory (valid during
  // the call).
  using UnitUpdated = std::function<void(int unit, const float* master)>;
  virtual void update(const float* grads, const AdamWConfig& c, std::int64_t t, float lr, const UnitUpdated& updated) = 0;
  virtual StateFootprint footprint() const = 0;
};

// A tensor's run within one unit's shard (offset from the unit's first element).
struct UnitSegment {
  std::size_t offset, length;
  bool decay;
};
// The segments of the optim shard grouped by unit (each tensor's run lies inside one unit).
std::vector<std::vector<UnitSegment>> segments_by_unit(const ShardLayout& optim, const std::vector<ShardSegment>& segments);
// The host AdamW update (optim.h) of one unit's segments, its arrays on the host.
void adamw_unit(const std::vector<UnitSegment>& segments, float* master, const float* g, float* m, float* v, const AdamWConfig& c,
                std::int64_t t, float lr);

// The store `plan` asks for, for this rank (world rank `rank`, whose swap
// file it names). Throws ConfigError for a directory that cannot hold it.
std::unique_ptr<OptimStore> make_optim_store(const Plan& plan, const ShardLayout& optim, const std::vector<ShardSegment>& segments,
                                             Memory& mem, StepOps& step_ops, int rank);

}  // namespace tierzero
