#include "plan/engine_buffers.h"

#include <algorithm>

namespace tierzero {

std::vector<FetchSlotSize> fetch_slot_sizes(const GptLayout& layout, const StateLayouts& states, int depth) {
  std::vector<FetchSlotSize> slots(static_cast<std::size_t>(depth) + 1);
  const auto pass = [&](const std::vector<int>& units, const ShardLayout& source) {
    for (std::size_t i = 0; i < units.size(); ++i) {
      const auto u = static_cast<std::size_t>(units[i]);
      FetchSlotSize& s = slots[i % slots.size()];
      s.compute = std::max(s.compute, layout.units()[u].numel);
      if (!source.whole[u]) s.gathered = std::max(s.gathered, source.shard[u] * static_cast<std::size_t>(source.group_size));
    }
  };
  pass(layout.forward_order(), states.params);
  pass(layout.backward_order(), states.bwd_distinct ? states.bwd_params : states.params);
  return slots;
}

std::array<std::size_t, 2> bucket_buffer_counts(const std::vector<GradBucket>& buckets) {
  std::array<std::size_t, 2> counts{};
  for (std::size_t b = 0; b < buckets.size(); ++b) counts[b % 2] = std::max(counts[b % 2], buckets[b].count);
  return counts;
}

std::size_t unit_grad_elements(const GptLayout& layout, bool tied) {
  std::size_t n = 0;
  for (std::size_t u = 0; u < layout.units().size(); ++u)
    if (!tied || static_cast<int>(u) != layout.embed_unit()) n = std::max(n, layout.units()[u].numel);
  return n;
}

}  // namespace tierzero
