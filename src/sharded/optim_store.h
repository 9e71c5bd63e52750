// Where one rank's optimizer shard lives (Plan::optim_offload.device) and the
// AdamW update over it. The shard is three arrays of ShardLayout::total
// floats (fp32 master weights, AdamW's m and v), laid out unit by unit as
// the optim ShardLayout says.
//   none  the backend's memory; the update runs there (StepOps).
//   cpu   host memory; the update runs on the host. On the CPU backend this
//         is the same memory and the same calls as none (the copies a
//         device would need are elided), so the arithmetic is identical;
//         what changes is where memory_bytes counts it. A GPU build would
//         stage gradients down and parameters up: not built yet (the
//         factory refuses it).
//   nvme  a file in its nvme_path (nvme_store.h), streamed through host
//         buffers unit by unit during the update.
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
  // Sets the shard from host arrays of the shard's size (initial weights, a checkpoint).
  virtual void assign(const float* master, const float* m, const float* v) = 0;
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

// The store `plan` asks for, for this rank (world rank `rank`, whose swap
// file it names). Throws ConfigError for an offload this backend cannot do.
std::unique_ptr<OptimStore> make_optim_store(const Plan& plan, const ShardLayout& optim, const std::vector<ShardSegment>& segments,
                                             Memory& mem, StepOps& step_ops, int rank);

}  // namespace tierzero
