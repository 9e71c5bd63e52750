#include "sim/traffic_model.h"

#include <algorithm>

#include "comm/hier/hop_plan.h"
#include "plan/grad_buckets.h"
#include "tierzero/communicator.h"
#include "quant/quant.h"

namespace tierzero {

namespace {
std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// One hop receiving `per_peer` bytes from each peer: charged to the level
// that separates each peer (f_l - 1 peers per inner combination).
HopTransfer hop_transfer(Phase ph, Collective k, const Topology& t, const HopGroup& hop, std::uint64_t per_peer) {
  HopTransfer x{ph, k, hop.fanout, {}, 0, -1};
  int inner = 1;
  for (Level l : hop.levels) {
    x.bytes[static_cast<int>(l)] += per_peer * static_cast<std::uint64_t>(t.fanout(l) - 1) * inner;
    inner *= t.fanout(l);
  }
  return x;
}

// The collective `r` over group(top) as its HopPlan (comm/hier/hop_plan.h)
// runs it: one transfer per hop, the bytes of all its stages on that hop
// (an all-reduce's reduce-scatter and all-gather) and all chunks. Outermost
// hop first, as the weight gathers run (a reduce-scatter runs them in
// reverse order, with the same bytes); the quantised reduce-scatter's
// all-to-alls innermost first, with the values each (de)quantises. Cut into
// chunks of `chunk_bytes` (the plan's hop_chunk_bytes) as the engine cuts it.
void planned(std::vector<HopTransfer>& out, Phase ph, Collective k, const Topology& t, const HopSpec& spec, Level top,
             HopRequest r, std::size_t chunk_bytes) {
  r.chunk_bytes = chunk_bytes;
  const HopPlan plan(hop_groups(t, spec, top), r);
  const std::size_t n = plan.hops().size();
  std::vector<std::uint64_t> bytes(n, 0), quantized(n, 0);
  for (std::size_t st = 0; st < plan.num_stages(); ++st) {
    const HopStage& g = plan.stage(st, 0);
    if (!g.transfer) continue;
    bytes[g.hop] += plan.peer_bytes(st);
    if (g.op == Collective::all_to_all && g.bits != 16)  // each value quantised by its sender, dequantised here, in fp32
      quantized[g.hop] = 2 * plan.peer_values(st) * static_cast<std::uint64_t>(plan.hops()[g.hop].fanout) * sizeof(float);
  }
  const bool inner_first = r.kind == HopCollective::reduce_scatter_quantized;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t h = inner_first ? i : n - 1 - i;
    HopTransfer x = hop_transfer(ph, k, t, plan.hops()[h], bytes[h]);
    x.quantized_bytes = quantized[h];
    x.chunks = static_cast<int>(plan.num_chunks());
    x.hop_index = static_cast<int>(i), x.hops = static_cast<int>(n);
    out.push_back(x);
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
        planned(out, ph, Collective::all_gather, t, gspec, *part, {HopCollective::all_gather, s, ds}, p.hop_chunk_bytes);
      } else {
        planned(out, ph, Collective::all_gather, t, gspec, *part,
                {HopCollective::all_gather_quantized, s, ds, QuantSpec{bits, false, p.quant_block}}, p.hop_chunk_bytes);
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
        if (hop_groups(t, rspec).size() >= 2)
          planned(out, Phase::reduce, Collective::all_reduce, t, rspec, Level::world,
                  {HopCollective::all_reduce, count, ds}, p.hop_chunk_bytes);
        else
          flat_all_reduce(out, Phase::reduce, t, all, me, count, ds);
        continue;
      }
      if (p.quantized())  // qgZ: hop h moves (f_h - 1) pieces of count * (outer hop sizes) elements
        planned(out, Phase::reduce, Collective::all_to_all, t, rspec, *p.grads,
                {HopCollective::reduce_scatter_quantized, count, ds, QuantSpec{8, false, p.quant_block}, p.grad_bits}, p.hop_chunk_bytes);
      else
        planned(out, Phase::reduce, Collective::reduce_scatter, t, rspec, *p.grads,
                {HopCollective::reduce_scatter, count, ds}, p.hop_chunk_bytes);
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
      planned(out, Phase::step, Collective::all_gather, t, rspec, *p.optim,
              {HopCollective::all_gather, shard(p.optim, static_cast<int>(u)), ds}, p.hop_chunk_bytes);
  return out;
}

std::vector<HopTransfer> collective_hops(Collective k, const Topology& topo, const HopSpec& spec, std::uint64_t shard_bytes) {
  // An all-gather's plan of the shard's bytes: a reduce-scatter's has the same bytes per hop, and the other
  // collectives are priced as it here.
  std::vector<HopTransfer> out;
  planned(out, Phase::forward, k, topo, spec, Level::world, {HopCollective::all_gather, shard_bytes, 1}, 0);
  return out;
}

std::array<std::uint64_t, kNumLevels> total_bytes(const std::vector<HopTransfer>& t) {
  std::array<std::uint64_t, kNumLevels> s{};
  for (const HopTransfer& x : t)
    for (int l = 0; l < kNumLevels; ++l) s[l] += x.bytes[l];
  return s;
}

}  // namespace tierzero
