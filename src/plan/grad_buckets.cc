#include "plan/grad_buckets.h"

namespace tierzero {

std::vector<GradBucket> grad_buckets(const std::vector<int>& order, const ShardLayout& grads, std::size_t wire_size,
                                     std::size_t bucket_bytes) {
  const auto group = static_cast<std::size_t>(grads.group_size);
  std::vector<GradBucket> buckets;
  for (int u : order) {
    if (buckets.empty() || buckets.back().count * group * wire_size >= bucket_bytes) buckets.emplace_back();
    buckets.back().units.push_back(u);
    buckets.back().count += grads.shard[static_cast<std::size_t>(u)];
  }
  return buckets;
}

}  // namespace tierzero
