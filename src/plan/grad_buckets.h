// grad_buckets: how a plan groups gradients for reduction, the one rule the
// engine's GradReducer follows and the traffic model prices: units in
// reduce order (GptLayout::reduce_order), a new bucket once the current one
// carries Plan::bucket_bytes on the wire (its shard elements x the
// reduction group x the wire type's size).
#pragma once

#include <cstddef>
#include <vector>

namespace tierzero {

// Each bucket's units, in order; `shard[u]` is unit u's elements per rank.
std::vector<std::vector<int>> grad_buckets(const std::vector<int>& order, const std::vector<std::size_t>& shard, std::size_t group,
                                           std::size_t wire_size, std::size_t bucket_bytes);

}  // namespace tierzero
