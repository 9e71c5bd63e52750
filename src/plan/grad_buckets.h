// grad_buckets: how a plan groups gradients for reduction, the one rule the
// engine's GradReducer follows and the traffic model prices: units in
// reduce order (GptLayout::reduce_order), a new bucket once the current one
// carries Plan::bucket_bytes on the wire (its shard elements x the
// reduction group x the wire type's size).
#pragma once

#include <cstddef>
#include <vector>

#include "plan/shard_layout.h"

namespace tierzero {

struct GradBucket {
  std::vector<int> units;  // in reduce order
  std::size_t count = 0;   // the units' shard elements per rank
};

// The buckets of `grads` (the gradient partition's layout) over `order`.
std::vector<GradBucket> grad_buckets(const std::vector<int>& order, const ShardLayout& grads, std::size_t wire_size,
                                     std::size_t bucket_bytes);

}  // namespace tierzero
