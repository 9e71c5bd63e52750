#include "plan/shard_layout.h"

#include <algorithm>
#include <utility>

namespace tierzero {

ShardLayout ShardLayout::make(const GptLayout& layout, const Topology& topo, const Partition& level, int world_rank,
                              std::size_t whole_at_most) {
  ShardLayout s;
  if (level) {
    const std::vector<int> group = topo.group(*level, world_rank);
    s.group_size = static_cast<int>(group.size());
    s.position = static_cast<int>(std::find(group.begin(), group.end(), world_rank) - group.begin());
  }
  for (const UnitInfo& u : layout.units()) {
    const bool whole = level && u.numel <= whole_at_most;
    const std::size_t su = whole ? u.numel : (u.numel + s.group_size - 1) / s.group_size;
    s.whole.push_back(whole);
    s.offset.push_back(s.total);
    s.shard.push_back(su);
    s.total += su;
  }
  return s;
}

std::size_t ShardLayout::valid(const GptLayout& layout, int unit) const {
  const std::size_t n = layout.units()[unit].numel, first = begin(unit);
  return first >= n ? 0 : std::min(shard[unit], n - first);
}

StateLayouts StateLayouts::make(const GptLayout& layout, const Topology& topo, const Plan& plan, int world_rank) {
  StateLayouts s;
  s.params = ShardLayout::make(layout, topo, plan.params, world_rank, plan.persist_threshold);
  s.bwd_params = ShardLayout::make(layout, topo, plan.bwd_params, world_rank, plan.persist_threshold);
  s.grads = ShardLayout::make(layout, topo, plan.grads, world_rank);
  s.optim = ShardLayout::make(layout, topo, plan.optim, world_rank);
  s.bwd_distinct = plan.bwd_params != plan.params;
  return s;
}

std::vector<ShardSegment> shard_segments(const GptLayout& layout, const ShardLayout& s) {
  std::vector<ShardSegment> out;
  for (const TensorInfo& t : layout.tensors()) {
    const std::size_t begin = s.begin(t.unit), end = begin + s.shard[t.unit];
    const std::size_t lo = std::max(begin, t.unit_offset), hi = std::min(end, t.unit_offset + t.numel);
    if (lo < hi) out.push_back({s.offset[t.unit] + (lo - begin), hi - lo, t.decay});
  }
  return out;
}

std::vector<ShardSegment> norm_segments(const GptLayout& layout, const ShardLayout& s) {
  const int rank = layout.tp().rank;
  std::vector<ShardSegment> out;
  for (const TensorInfo& t : layout.tensors()) {
    // The member's counted runs of the tensor, as [lo, hi) in its unit, adjacent runs merged.
    std::vector<std::pair<std::size_t, std::size_t>> runs;
    auto counted = [&](std::size_t lo, std::size_t length) {
      if (!runs.empty() && runs.back().second == lo) runs.back().second += length;
      else runs.emplace_back(lo, lo + length);
    };
    if (t.split == TpSplit::replicated) {
      if (rank == 0) counted(t.unit_offset, t.numel);
    } else {
      for (const TpSlice& slice : t.slices)
        if (slice.owned_by(rank))
          for (std::size_t i = 0; i < slice.count; ++i) counted(t.unit_offset + slice.local + i * slice.local_stride, slice.length);
    }
    const std::size_t begin = s.begin(t.unit), end = begin + s.shard[t.unit];
    for (const auto& [first, last] : runs) {
      const std::size_t lo = std::max(begin, first), hi = std::min(end, last);
      if (lo < hi) out.push_back({s.offset[t.unit] + (lo - begin), hi - lo, t.decay});
    }
  }
  return out;
}

}  // namespace tierzero
