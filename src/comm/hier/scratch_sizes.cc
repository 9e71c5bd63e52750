#include "comm/hier/scratch_sizes.h"

#include <algorithm>

namespace tierzero {

ScratchSizes::ScratchSizes(const Topology& group, const HopSpec& spec, std::size_t chunk_bytes)
    : chunk_bytes_(chunk_bytes) {
  // The Hierarchy keeps each hop's levels whole (hop_groups with top = world).
  hops_ = hop_groups(group, spec);
}

void ScratchSizes::need(const HopRequest& r) {
  HopRequest chunked = r;
  if (r.kind != HopCollective::all_reduce) chunked.chunk_bytes = chunk_bytes_;  // as HopState::plan
  const HopPlan plan(hops_, chunked);
  for (int i = 0; i < kNumScratch; ++i) bytes_[i] = std::max(bytes_[i], plan.scratch()[i]);
}

void ScratchSizes::all_gather(std::size_t count, std::size_t esize) {
  need({HopCollective::all_gather, count, esize});
}

void ScratchSizes::reduce_scatter(std::size_t count, std::size_t esize) {
  need({HopCollective::reduce_scatter, count, esize});
}

void ScratchSizes::all_reduce(std::size_t count, std::size_t esize) {
  need({HopCollective::all_reduce, count, esize});
}

void ScratchSizes::all_gather_quantized(std::size_t count, std::size_t esize, const QuantSpec& q) {
  need({HopCollective::all_gather_quantized, count, esize, q});
}

void ScratchSizes::reduce_scatter_quantized(std::size_t count, std::size_t esize, const HopBits& bits, const QuantSpec& q) {
  need({HopCollective::reduce_scatter_quantized, count, esize, q, bits});
}

std::size_t ScratchSizes::total() const {
  std::size_t t = 0;
  for (std::size_t b : bytes_) t += b;
  return t;
}

}  // namespace tierzero
