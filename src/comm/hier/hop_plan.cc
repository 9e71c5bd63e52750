#include "comm/hier/hop_plan.h"

#include <algorithm>

namespace tierzero {

std::vector<HopGroup> hop_groups(const Topology& topo, const HopSpec& spec, Level top) {
  std::vector<HopGroup> out;
  for (const std::vector<Level>& levels : spec) {
    HopGroup g;
    for (Level l : levels)
      if (static_cast<int>(l) <= static_cast<int>(top)) g.levels.push_back(l), g.fanout *= topo.fanout(l);
    if (g.fanout > 1) out.push_back(std::move(g));
  }
  return out;
}

bool HopRequest::operator==(const HopRequest& o) const {
  return kind == o.kind && count == o.count && esize == o.esize && bits == o.bits && quant.bits == o.quant.bits &&
         quant.asymmetric == o.quant.asymmetric && quant.block == o.quant.block && chunk_bytes == o.chunk_bytes;
}

namespace {
bool quantized(HopCollective k) { return k == HopCollective::all_gather_quantized || k == HopCollective::reduce_scatter_quantized; }

// Elements per chunk: chunk_bytes of the call's type, on whole quantisation
// blocks for the quantised ones; the whole count where cutting is not allowed.
std::size_t elements_per_chunk(const HopRequest& r, std::size_t num_hops) {
  const std::size_t whole = std::max<std::size_t>(r.count, 1);
  if (r.chunk_bytes == 0 || num_hops < 2 || r.kind == HopCollective::all_reduce) return whole;
  if (r.kind == HopCollective::reduce_scatter_quantized && r.count % r.quant.block != 0) return whole;
  std::size_t c = std::max<std::size_t>(r.chunk_bytes / r.esize, 1);
  if (quantized(r.kind)) c = std::max<std::size_t>(c / r.quant.block, 1) * r.quant.block;
  return std::min(c, whole);
}
}  // namespace

HopPlan::HopPlan(std::vector<HopGroup> hops, const HopRequest& r) : hops_(std::move(hops)), req_(r) {
  for (const HopGroup& g : hops_) group_ *= static_cast<std::size_t>(g.fanout);
  chunk_ = elements_per_chunk(r, hops_.size());
  num_chunks_ = std::max<std::size_t>((r.count + chunk_ - 1) / chunk_, 1);
  full_ = walk(chunk_len(0));
  last_ = walk(chunk_len(num_chunks_ - 1));
  for (const std::vector<HopStage>* stages : {&full_, &last_})
    for (const HopStage& s : *stages)
      for (int o : s.out)
        if (o >= 0) scratch_[o] = std::max(scratch_[o], s.out_bytes);
  // The quantised reduce-scatter's temporaries, which no stage hands on:
  // the reordered input and its fp32 sum (hier_quant_reduce_scatter.cc).
  if (r.kind == HopCollective::reduce_scatter_quantized)
    for (Scratch s : {Scratch::quant_first, Scratch::quant_second})
      scratch_[scratch_index(s)] = std::max(scratch_[scratch_index(s)], chunk_len(0) * group_ * sizeof(float));
}

std::uint64_t HopPlan::peer_bytes(std::size_t st) const {
  return (num_chunks_ - 1) * full_[st].peer_bytes() + last_[st].peer_bytes();
}

std::uint64_t HopPlan::peer_values(std::size_t st) const {
  return (num_chunks_ - 1) * full_[st].values + last_[st].values;
}

// The stages of a chunk of `len` elements per rank. Each algorithm's file
// says what its local stages do; the buffers here are the ones it uses.
std::vector<HopStage> HopPlan::walk(std::size_t len) const {
  std::vector<HopStage> st;
  const std::size_t k = hops_.size(), w = group_, es = req_.esize;
  const bool piped = num_chunks_ > 1;
  int next_pipe = kNumNamedScratch;
  // A stage output's buffers: the named one when whole, two pipe buffers when pipelined.
  auto out = [&](Scratch whole) -> std::array<int, 2> {
    if (!piped) return {scratch_index(whole), -1};
    next_pipe += 2;
    return {next_pipe - 2, next_pipe - 1};
  };
  const std::array<int, 2> caller{-1, -1};
  auto local = [&](std::size_t bytes, std::array<int, 2> o) {
    HopStage s;
    s.out_bytes = bytes, s.out = o;
    st.push_back(s);
  };
  auto transfer = [&](std::size_t h, Collective op, std::size_t count, std::size_t esize, int bits, std::size_t values,
                      std::size_t bytes, std::array<int, 2> o) {
    HopStage s;
    s.transfer = true, s.hop = h, s.op = op, s.count = count, s.esize = esize, s.bits = bits, s.values = values;
    s.out_bytes = bytes, s.out = o;
    st.push_back(s);
  };
  auto fanout = [&](std::size_t h) { return static_cast<std::size_t>(hops_[h].fanout); };
  // hier_all_gather.cc: outermost hop first, each peer sending the bundle
  // gathered so far; one hop writes `last` directly, more hops end in a
  // local reordering of the bundle.
  auto gather = [&](std::size_t shard, std::size_t esize, int bits, std::size_t values, std::array<int, 2> last) {
    std::size_t cur = shard, bundle = values;
    for (std::size_t h = k; h-- > 0;) {
      transfer(h, Collective::all_gather, cur, esize, bits, bundle, cur * fanout(h) * esize, k == 1 ? last : out(plain_scratch(h)));
      cur *= fanout(h), bundle *= fanout(h);
    }
  };
  switch (req_.kind) {
    case HopCollective::all_gather:
      gather(len, es, 16, len, caller);
      if (k >= 2) local(0, caller);  // the bundle, reordered into the caller's buffer
      break;
    case HopCollective::reduce_scatter: {
      if (k == 1) transfer(0, Collective::reduce_scatter, len, es, 16, len, 0, caller);
      if (k < 2) break;
      std::size_t cur = len * w;
      local(cur * es, out(Scratch::plain_even));  // the input, innermost coordinate major
      for (std::size_t h = 0; h < k; ++h) {
        cur /= fanout(h);
        const bool last = h + 1 == k;
        transfer(h, Collective::reduce_scatter, cur, es, 16, cur, last ? 0 : cur * es, last ? caller : out(plain_scratch(h + 1)));
      }
      break;
    }
    case HopCollective::all_reduce: {
      if (k == 1) transfer(0, Collective::all_reduce, len, es, 16, len, 0, caller);
      if (k < 2) break;
      std::size_t cur = (len + w - 1) / w * w;
      local(cur * es, out(Scratch::plain_even));  // the input, padded to a multiple of the group
      std::size_t turn = 0;  // buffers alternate: the input and output of each hop differ
      for (std::size_t h = 0; h < k; ++h) {
        cur /= fanout(h);
        transfer(h, Collective::reduce_scatter, cur, es, 16, cur, cur * es, out(plain_scratch(++turn)));
      }
      for (std::size_t h = k; h-- > 0;) {
        transfer(h, Collective::all_gather, cur, es, 16, cur, cur * fanout(h) * es, out(plain_scratch(++turn)));
        cur *= fanout(h);
      }
      local(0, caller);  // the result, unpadded, into the caller's buffer
      break;
    }
    case HopCollective::all_gather_quantized: {
      const std::size_t packed = quant_packed_bytes(len, req_.quant);
      local(packed, out(Scratch::quant_first));  // this rank's chunk, quantised
      gather(packed, 1, req_.quant.bits, len, k == 1 ? out(Scratch::quant_second) : caller);
      // Every rank's packed chunk in rank order (reordered, or copied with no hop), dequantised into the caller's buffer.
      const int bundle = scratch_index(Scratch::quant_second);  // used within one stage: one buffer for every chunk
      local(packed * w, k == 1 ? st.back().out : std::array<int, 2>{bundle, bundle});
      break;
    }
    case HopCollective::reduce_scatter_quantized: {
      // hier_quant_reduce_scatter.cc: before each hop, local work that
      // sums what the previous hop brought (the input, reordered, before
      // the first) and packs its pieces; after the last, the result.
      std::size_t cur = len * w;
      for (std::size_t h = 0; h < k; ++h) {
        cur /= fanout(h);
        const int bits = req_.bits.at_hop(hops_[h].levels);
        QuantSpec q = req_.quant;
        q.bits = bits;
        const std::size_t piece = bits == 16 ? cur * es : quant_packed_bytes(cur, q);
        local(piece * fanout(h), out(Scratch::hop_send));
        transfer(h, Collective::all_to_all, bits == 16 ? cur : piece, bits == 16 ? es : 1, bits, cur, piece * fanout(h),
                 out(Scratch::hop_recv));
      }
      local(0, caller);
      break;
    }
  }
  return st;
}

}  // namespace tierzero
