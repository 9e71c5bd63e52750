// The sizes of the sharded engine's working buffers (src/sharded), from the
// layouts: what ShardedTrainer allocates and what the simulator's memory
// model counts for tierzero's engine, one rule for both. Each buffer is
// sized to the largest thing that lands in it, so a step touches every byte
// allocated (a rank's resident memory is what was predicted). Pure functions.
#pragma once
#include <array>
#include <cstddef>
#include <vector>

#include "plan/grad_buckets.h"
#include "plan/shard_layout.h"

namespace tierzero {

// One slot of the unit fetcher's ring (UnitFetcher), in elements: a
// gathered unit in the working dtype and its fp32 copy.
struct FetchSlotSize {
  std::size_t gathered = 0;
  std::size_t compute = 0;
};

// The ring of depth + 1 slots: the i-th unit of a pass lands in slot
// i % (depth + 1); the forward pass gathers from the params layout, the
// backward one from bwd_params (hpZ) or params. A unit held whole (a
// persistent one) needs no gathered space.
std::vector<FetchSlotSize> fetch_slot_sizes(const GptLayout& layout, const StateLayouts& states, int depth);

// The reducer's two buffers (GradReducer): bucket b fills buffer b % 2;
// each one's largest bucket, in elements per member.
std::array<std::size_t, 2> bucket_buffer_counts(const std::vector<GradBucket>& buckets);

// The fp32 gradient of the unit being computed: any unit's but a tied
// embedding's (held whole for the step with its own gradient).
std::size_t unit_grad_elements(const GptLayout& layout, bool tied);

}  // namespace tierzero
