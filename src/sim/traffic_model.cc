#include "sim/traffic_model.h"

#include <algorithm>

#include "plan/grad_buckets.h"
#include "tierzero/communicator.h"
#include "quant/quant.h"

namespace tierzero {

namespace {
std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// The hops of `spec` inside group(top), innermost first (hops of one rank skipped).
std::vector<std::vector<Level>> hops_within(const HopSpec& spec, const Topology& t, Level top) {
  std::vector<std::vector<Level>> out;
  for (const auto& hop : spec) {
    std::vector<Level> kept;
    int size = 1;
    for (Level l : hop)
      if (static_cast<int>(l) <= static_cast<int>(top)) kept.push_back(l), size *= t.fanout(l);
    if (size > 1) out.push_back(kept);
  }
  return out;
}

int hop_size(const Topology& t, const std::vector<Level>& hop) {
  int s = 1;
  for (Level l : hop) s *= t.fanout(l);
  return s;
}

// One hop receiving `per_peer` bytes from each peer: charged to the level
// that separates each peer (f_l - 1 peers per inner combination).
HopTransfer hop_transfer(Phase ph, Collective k, const Topology& t, const std::vector<Level>& hop, std::uint64_t per_peer) {
  HopTransfer x{ph, k, hop_size(t, hop), {}, 0, -1};
  int inner = 1;
  for (Level l : hop) {
    x.bytes[static_cast<int>(l)] += per_peer * static_cast<std::uint64_t>(t.fanout(l) - 1) * inner;
    inner *= t.fanout(l);
  }
  return x;
}

// All-gather (or reduce-scatter) over group(top): outermost hop first, each
// peer contributing the bundle gathered so far.
template <class Bytes>
void gather(std::vector<HopTransfer>& out, Phase ph, Collective k, const Topology& t, const HopSpec& spec, Level top,
            std::size_t shard, Bytes bytes) {
  const auto hops = hops_within(spec, t, top);
  std::size_t bundle = shard;
  for (std::size_t h = hops.size(); h-- > 0;) {
    out.push_back(hop_transfer(ph, k, t, hops[h], bytes(bundle)));
    bundle *= hop_size(t, hops[h]);
  }
}

}  // namespace

void flat_all_reduce(std::vector<HopTransfer>& out, Phase ph, const Topology& t, const std::vector<int>& members, int me,
                     std::size_t n, std::size_t esize) {
  HopTransfer x{ph, Collective::all_reduce, static_cast<int>(members.size()), {}, 0, -1};
  const int w = static_cast<int>(members.size());
  const int mine = static_cast<int>(std::find(members.begin(), members.end(), me) - members.begin());
  for (int j = 0; j < w; ++j)
    if (j != mine) x.bytes[static_cast<int>(t.separating_level(me, members[j]))] += (even_chunk(n, w, mine) + even_chunk(n, w, j)) * esize;
  if (w > 1) out.push_back(x);
}
std::vector<HopTransfer> step_transfers(const Plan& p, const Topology& t, const TrainConfig& c, int me, const TensorMember* member) {
  std::vector<HopTransfer> out;
  const GptLayout layout(c.model, member ? member->shard : TpShard{});
  const std::size_t ds = dtype_size(c.param_dtype);
  const HopSpec gspec = hop_spec(p.gather), rspec = hop_spec(p.reduce);
  const auto& units = layout.units();
  auto shard = [&](const Partition& part, int u) { return ceil_div(units[u].numel, partition_group_size(t, part)); };
  std::vector<int> all(t.size());
  for (int i = 0; i < t.size(); ++i) all[i] = i;
  // Gradient buckets as the engine forms them (zero1: one bucket).
  const std::vector<GradBucket> buckets = grad_buckets(layout.reduce_order(), ShardLayout::make(layout, t, p.grads, me), ds, p.bucket_bytes);
  for (int micro = 0; micro < c.grad_accum; ++micro) {
    auto fetch = [&](Phase ph, const Partition& part, int u, int bits) {
      if (!part || p.persistent(units[u].numel)) return;  // replicated, or held whole
      const std::size_t s = shard(part, u);
      const std::size_t before = out.size();
      if (bits == 16) {
        gather(out, ph, Collective::all_gather, t, gspec, *part, s, [&](std::size_t e) { return e * ds; });
      } else {
        const std::size_t packed = quant_packed_bytes(s, {bits, false, p.quant_block});
        gather(out, ph, Collective::all_gather, t, gspec, *part, 1, [&](std::size_t b) { return b * packed; });
        if (out.size() > before) out[before].quantized_bytes = s * ds * (1 + partition_group_size(t, part));  // quantise mine, dequantise all
      }
      for (std::size_t i = before; i < out.size(); ++i) out[i].unit = u;
    };
    for (int u : layout.forward_order()) fetch(Phase::forward, p.params, u, p.weight_bits);
    const bool distinct = p.bwd_params != p.params;
    for (int u : layout.backward_order()) fetch(Phase::backward, distinct ? p.bwd_params : p.params, u, distinct ? 16 : p.weight_bits);
    for (const GradBucket& bucket : buckets) {
      const std::size_t count = bucket.count;
      if (!p.grads) {
        if (hops_within(rspec, t, Level::world).size() >= 2)
          gather(out, Phase::reduce, Collective::all_reduce, t, rspec, Level::world, ceil_div(count, t.size()),
                 [&](std::size_t e) { return 2 * e * ds; });
        else
          flat_all_reduce(out, Phase::reduce, t, all, me, count, ds);
        continue;
      }
      if (p.quantized()) {  // qgZ: hop h moves (f_h - 1) pieces of count * (outer hop sizes) elements
        const auto hops = hops_within(rspec, t, *p.grads);
        for (std::size_t h = 0; h < hops.size(); ++h) {
          std::size_t piece = count;
          for (std::size_t o = h + 1; o < hops.size(); ++o) piece *= hop_size(t, hops[o]);
          const int bits = p.grad_bits.at_hop(hops[h]);
          const std::size_t bytes = bits == 16 ? piece * ds : quant_packed_bytes(piece, {bits, false, p.quant_block});
          HopTransfer x = hop_transfer(Phase::reduce, Collective::all_to_all, t, hops[h], bytes);
          if (bits != 16) x.quantized_bytes = 2 * piece * static_cast<std::size_t>(x.hop_size) * 4;
          out.push_back(x);
        }
      } else {
        gather(out, Phase::reduce, Collective::reduce_scatter, t, rspec, *p.grads, count, [&](std::size_t e) { return e * ds; });
      }
      if (*p.grads != Level::world) flat_all_reduce(out, Phase::reduce, t, t.cross_group(*p.grads, me), me, count, ds);
    }
  }
  if (member) {  // loss and squared gradient norm, over the whole world
    std::vector<int> everyone(member->world.size());
    for (int i = 0; i < member->world.size(); ++i) everyone[i] = i;
    flat_all_reduce(out, Phase::step, member->world, everyone, member->world_rank, 2, 4);
  } else {
    flat_all_reduce(out, Phase::step, t, all, me, 2, 4);
  }
  // Replicated params, and units held whole, rebuilt from the optim shards.
  for (std::size_t u = 0; u < units.size(); ++u)
    if (p.rebuilt_after_update(units[u].numel))
      gather(out, Phase::step, Collective::all_gather, t, rspec, *p.optim, shard(p.optim, static_cast<int>(u)),
             [&](std::size_t e) { return e * ds; });
  return out;
}

std::vector<HopTransfer> collective_hops(Collective k, const Topology& topo, const HopSpec& spec, std::uint64_t shard_bytes) {
  std::vector<HopTransfer> out;
  gather(out, Phase::forward, k, topo, spec, Level::world, 1, [&](std::size_t n) { return n * shard_bytes; });
  return out;
}

std::array<std::uint64_t, kNumLevels> total_bytes(const std::vector<HopTransfer>& t) {
  std::array<std::uint64_t, kNumLevels> s{};
  for (const HopTransfer& x : t)
    for (int l = 0; l < kNumLevels; ++l) s[l] += x.bytes[l];
  return s;
}

}  // namespace tierzero
