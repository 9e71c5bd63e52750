#include "plan/grad_buckets.h"

namespace tierzero {

std::vector<std::vector<int>> grad_buckets(const std::vector<int>& order, const std::vector<std::size_t>& shard, std::size_t group,
                                           std::size_t wire_size, std::size_t bucket_bytes) {
  std::vector<std::vector<int>> buckets;
  std::size_t count = 0;  // elements of the last bucket
  for (int u : order) {
    if (buckets.empty() || count * group * wire_size >= bucket_bytes) buckets.emplace_back(), count = 0;
    buckets.back().push_back(u);
    count += shard[static_cast<std::size_t>(u)];
  }
  return buckets;
}

}  // namespace tierzero
