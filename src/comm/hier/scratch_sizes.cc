#include "comm/hier/scratch_sizes.h"

#include <algorithm>

namespace tierzero {

ScratchSizes::ScratchSizes(const Topology& group, const HopSpec& spec) {
  for (const std::vector<Level>& levels : spec) {
    std::size_t f = 1;
    for (Level l : levels) f *= static_cast<std::size_t>(group.fanout(l));
    if (f == 1) continue;
    levels_.push_back(levels);
    fanout_.push_back(f);
    group_ *= f;
  }
}

void ScratchSizes::need(Scratch which, std::size_t bytes) {
  std::size_t& b = bytes_[static_cast<int>(which)];
  b = std::max(b, bytes);
}

// hier_all_gather.cc: outermost hop first, each into the next plain buffer.
void ScratchSizes::all_gather(std::size_t count, std::size_t esize) {
  const std::size_t k = fanout_.size();
  if (k <= 1) return;
  std::size_t cur = count;
  for (std::size_t h = k; h-- > 0;) {
    need(plain_scratch(h), cur * fanout_[h] * esize);
    cur *= fanout_[h];
  }
}

// hier_reduce_scatter.cc: the reordered input, then each hop's output but the last.
void ScratchSizes::reduce_scatter(std::size_t count, std::size_t esize) {
  const std::size_t k = fanout_.size();
  if (k <= 1) return;
  std::size_t cur = count * group_;
  need(Scratch::plain_even, cur * esize);
  for (std::size_t h = 0; h + 1 < k; ++h) {
    cur /= fanout_[h];
    need(plain_scratch(h + 1), cur * esize);
  }
}

// hier_all_reduce.cc: the padded input, then alternating buffers through the reduce-scatter and the all-gather.
void ScratchSizes::all_reduce(std::size_t count, std::size_t esize) {
  const std::size_t k = fanout_.size();
  if (k <= 1) return;
  std::size_t cur = (count + group_ - 1) / group_ * group_;
  need(Scratch::plain_even, cur * esize);
  std::size_t turn = 0;
  for (std::size_t h = 0; h < k; ++h) {
    cur /= fanout_[h];
    need(plain_scratch(++turn), cur * esize);
  }
  for (std::size_t h = k; h-- > 0;) {
    need(plain_scratch(++turn), cur * fanout_[h] * esize);
    cur *= fanout_[h];
  }
}

// hier_quant_all_gather.cc: this rank's packed shard, every rank's, and the plain all-gather of the packed bytes.
void ScratchSizes::all_gather_quantized(std::size_t count, const QuantSpec& q) {
  const std::size_t packed = quant_packed_bytes(count, q);
  need(Scratch::packed_shard, packed);
  need(Scratch::packed_bundle, packed * group_);
  all_gather(packed, 1);
}

// hier_quant_reduce_scatter.cc: the input in fp32 and the running sum, and each hop's all-to-all.
void ScratchSizes::reduce_scatter_quantized(std::size_t count, std::size_t esize, const HopBits& bits, const QuantSpec& q) {
  std::size_t cur = count * group_;
  need(Scratch::f32_input, cur * sizeof(float));
  need(Scratch::f32_sum, cur * sizeof(float));
  for (std::size_t h = 0; h < fanout_.size(); ++h) {
    cur /= fanout_[h];
    const int b = bits.at_hop(levels_[h]);
    QuantSpec qs = q;
    qs.bits = b;
    const std::size_t piece = b == 16 ? cur * esize : quant_packed_bytes(cur, qs);
    need(Scratch::hop_send, piece * fanout_[h]);
    need(Scratch::hop_recv, piece * fanout_[h]);
  }
}

std::size_t ScratchSizes::total() const {
  std::size_t t = 0;
  for (std::size_t b : bytes_) t += b;
  return t;
}

}  // namespace tierzero
