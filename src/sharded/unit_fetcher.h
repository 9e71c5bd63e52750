// Brings parameter units into fp32 compute buffers, `depth` units ahead of
// the one being computed. A unit comes from one rank-local ParamStore (in
// memory, or streamed from a file: param_store.h), read as one pass over
// the units: a partitioned store is all-gathered (quantised when bits <
// 16) through a Hierarchy (a job of the rank's CommSchedule); a replicated
// store, or a unit the store holds whole (a persistent unit), is converted
// in place. Optionally keeps this rank's slice of every gathered unit in a
// secondary store (hpZ). Buffers live in the backend's Memory
// (core/memory.h) and are allocated at construction. Waits for gathers are charged to
// `meter` (comm/exec_clock.h). One thread.
#pragma once
#include <vector>

#include "comm/exec_clock.h"
#include "comm/hier/hierarchy.h"
#include "plan/engine_buffers.h"
#include "plan/shard_layout.h"
#include "sharded/param_store.h"
#include "tierzero/flight_recorder.h"

namespace tierzero {

struct UnitSource {
  Hierarchy* hier = nullptr;       // nullptr: replicated store
  ParamStore* store = nullptr;
  const ShardLayout* layout = nullptr;
  int bits = 16;                    // 16, or 8/4 for a quantised gather (qwZ)
  std::size_t quant_block = 256;
  FlightPhase phase = FlightPhase::forward_gather;  // what the gathers are tagged as (tierzero/flight_recorder.h)
};

struct SecondaryStore {
  ParamStore* store = nullptr;
  const ShardLayout* layout = nullptr;
};

class UnitFetcher {
 public:
  // slots: the ring, depth + 1 of them (plan/engine_buffers.h's fetch_slot_sizes for the passes it will be given).
  UnitFetcher(const GptLayout& layout, DType dtype, const std::vector<FetchSlotSize>& slots, Memory& mem, ElementOps& ops,
              WaitMeter& meter);
  // Starts a pass over `units` (in order) from `src` (its store's pass); keeps slices in `keep` when given.
  void begin(const std::vector<int>& units, const UnitSource& src, const SecondaryStore* keep = nullptr);
  // The fp32 parameters of the i-th unit of the pass (waits for its gather).
  const float* get(std::size_t i);
  // Frees the i-th unit's buffer and starts the next prefetch.
  void release(std::size_t i);
  std::size_t buffer_bytes() const;

 private:
  void launch(std::size_t i);
  struct Slot {
    MemArray<std::byte> gathered;
    MemArray<float> compute;
    Request pending;
  };
  const GptLayout& layout_;
  Memory& mem_;
  ElementOps& ops_;
  WaitMeter& meter_;
  DType dtype_;
  std::size_t dsize_;
  int depth_;
  std::vector<Slot> slots_;
  std::vector<int> units_;
  UnitSource src_;
  SecondaryStore keep_;
  bool keeping_ = false;
};

}  // namespace tierzero
