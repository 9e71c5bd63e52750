// How one model state is split for one rank: every parameter unit of n_u
// elements is padded to G * s_u, s_u = ceil(n_u / G), where G is the size of
// group(level); the rank at position p of its group holds elements
// [p * s_u, (p + 1) * s_u) of each unit (zeros past n_u), units one after
// another in its shard buffer. Replicated states have G = 1. The engine
// lays its states out so, and checkpoints are read back by it (docs/formats.md).
// Value types.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

#include "tierzero/dtype.h"
#include "tierzero/gpt_config.h"
#include "tierzero/plan.h"

namespace tierzero {

struct ShardLayout {
  int group_size = 1;
  int position = 0;
  std::vector<std::size_t> shard;   // s_u per unit
  std::vector<std::size_t> offset;  // unit offsets in the shard buffer
  std::vector<bool> whole;          // per unit: held whole by every rank
  std::size_t total = 0;            // sum of s_u

  // Units of at most `whole_at_most` elements are held whole when `level` partitions the state.
  static ShardLayout make(const GptLayout& layout, const Topology& topo, const Partition& level, int world_rank,
                          std::size_t whole_at_most = 0);
  // The unit's first element in this rank's shard.
  std::size_t begin(int unit) const { return whole[unit] ? 0 : position * shard[unit]; }
  // Elements of unit u that this rank's shard actually holds (the rest is padding).
  std::size_t valid(const GptLayout& layout, int unit) const;
  // The largest s_u (0 without units).
  std::size_t largest_shard() const { return shard.empty() ? 0 : *std::max_element(shard.begin(), shard.end()); }
};

// One rank's layouts of the four model states under a plan, and the bytes
// each takes: parameters (and backward parameters, kept only when the plan
// partitions them differently) in the parameter type, fp32 gradients, and
// the optimizer's fp32 master weights with AdamW's two moments. The engine
// allocates exactly these; the memory model (tierzero/simulator.h) reports them.
// The optimizer state's bytes per parameter: the fp32 master weight and
// AdamW's two fp32 moments (tierzero/optim.h), as the engine allocates them and
// an offloaded optimizer keeps them in host memory or its file.
inline constexpr std::size_t kOptimBytesPerParam = 3 * sizeof(float);

struct StateLayouts {
  ShardLayout params, bwd_params, grads, optim;
  bool bwd_distinct = false;  // the backward pass has its own parameter partition (hpZ)

  static StateLayouts make(const GptLayout& layout, const Topology& topo, const Plan& plan, int world_rank);
  std::size_t params_bytes(DType t) const { return params.total * dtype_size(t); }
  std::size_t bwd_params_bytes(DType t) const { return bwd_distinct ? bwd_params.total * dtype_size(t) : 0; }
  std::size_t grads_bytes() const { return grads.total * sizeof(float); }
  std::size_t optim_bytes() const { return optim.total * kOptimBytesPerParam; }
};

// A run of shard elements belonging to one tensor (for AdamW's decay flag,
// and the runs the gradient norm counts: norm_segments).
struct ShardSegment {
  std::size_t offset, length;
  bool decay;
};
std::vector<ShardSegment> shard_segments(const GptLayout& layout, const ShardLayout& s);
// The runs of shard `s` of a tensor-parallel member's layout that the member
// counts in the gradient norm, so that its group counts each element of the
// whole model once: the split tensors' slices it owns (TpSlice::owned_by:
// a shared key/value head's on its first sharer), the replicated tensors'
// on member 0 only.
std::vector<ShardSegment> norm_segments(const GptLayout& layout, const ShardLayout& s);

}  // namespace tierzero
