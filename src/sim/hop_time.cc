#include "sim/hop_time.h"

#include <cmath>

#include "sim/hop_algorithm.h"

namespace tierzero {

// How the system's collective library moves a hop (System::collectives).
// ring: every rank's bytes pass along one chain of ranks; the chain leaves
// each group below level l once, so the hop's ranks inside one such group
// share that group's links at level l: the chain's rate there is
// Q_l * bandwidth_l, Q_l the product of the hop's fan-outs inside level l
// (a flat all-gather over the 8 GCDs of a Frontier node uses the node's
// four NICs, 8 x 12.5 GB/s; the world hop of a hierarchical one runs 8
// chains at once, 12.5 GB/s each); transfer = all bytes / the slowest rate.
// direct: each level's bytes go straight to the peers over that level's
// link, levels in parallel; transfer = max_l bytes_l / bandwidth_l.
// A level whose table is keyed by groups (a measured system: whole
// collectives spanning that many groups, inner hops included) alone sets
// the rate of a ring whose outermost level it is.
// tree (Open MPI libnbc's reduce-scatter): a binomial reduce of the whole
// buffer M to one rank — ceil(log2 f_l) rounds across each level l, one
// sender per group below l, M / (Q_l bandwidth_l) each — then that rank
// sends every other its piece, bytes_l across level l at Q_l bandwidth_l.
// halving (libnbc's all-reduce over 2^k ranks): the steps run one after
// another, each rank over its own link: Σ_l halving_bytes_l / bandwidth_l,
// and 2 log2(size) latencies. A ring's P - 1 steps are (f_l - 1) x
// (the product of the outer levels' fan-outs) steps across level l, each at
// level l's latency (NCCL's own model: a ring's nNodes - 1 inter-node steps
// at the network's latency, the rest at NVLink's; src/graph/tuning.cc);
// the other algorithms pay one latency of the hop's slowest level per
// other peer. A level's rate is
// its achieved bandwidth for the hop's kind, participants (or the groups
// it spans at that level) and shard size (LinkSpec::bandwidth_at).
HopTime hop_time(const HopTransfer& h, const Topology& topo, const System& sys) {
  using Algo = HopAlgorithm;
  const Algo algo = hop_algorithm(h, sys);
  HopTime out;
  double total = 0, inner = 1, ring_rate = 0, alpha = 0, worst = 0;
  const double whole = hop_buffer(h);
  const std::array<double, kNumLevels> halving = algo == Algo::halving ? halving_bytes(h, topo) : std::array<double, kNumLevels>{};
  for (int l = 0; l < kNumLevels; ++l) {
    if (h.bytes[l] == 0) continue;
    const Level level = static_cast<Level>(l);
    const LinkSpec& link = sys.link(level);
    // The level's rate for this kind of collective, this many ranks (spanning fanout(level) groups at this
    // level) and this shard size (the link rate without a table).
    const double bandwidth = link.bandwidth_at({h.collective, h.hop_size, topo.fanout(level), h.hop_size > 0 ? whole / h.hop_size : 0.0});
    const double bytes = static_cast<double>(h.bytes[l]), rate = inner * bandwidth;
    total += bytes;
    if (link.latency_s >= alpha) alpha = link.latency_s, out.latency_level = l;
    double t = 0;
    if (algo == Algo::direct) t = bytes / bandwidth;
    if (algo == Algo::halving) t = halving[l] / bandwidth, out.transfer_s += t;
    if (algo == Algo::tree) t = bytes / rate, out.transfer_s += std::ceil(std::log2(topo.fanout(level))) * whole / rate;
    if (algo == Algo::ring && (ring_rate == 0 || rate <= ring_rate)) ring_rate = rate, out.bottleneck = l;  // ties: the outer level
    // A table keyed by groups measured whole collectives spanning that many groups, inner levels included: it
    // alone prices a ring whose outermost level it is.
    if (algo == Algo::ring && link.keyed_by_groups()) ring_rate = rate, out.bottleneck = l;
    if (algo != Algo::ring && t > worst) worst = t, out.bottleneck = l;
    inner *= topo.fanout(level);
  }
  if (algo != Algo::halving) out.transfer_s += algo == Algo::ring ? (ring_rate > 0 ? total / ring_rate : 0.0) : worst;
  if (algo == Algo::ring) {
    double outer = 1, most = -1;
    for (int l = kNumLevels - 1; l >= 0; --l) {
      if (h.bytes[l] == 0) continue;
      const double f = topo.fanout(static_cast<Level>(l)), t = (f - 1) * outer * sys.link(static_cast<Level>(l)).latency_s;
      out.latency_s += t, outer *= f;
      if (t > most) most = t, out.latency_level = l;
    }
  } else {
    out.latency_s = (algo == Algo::halving ? 2 * std::log2(h.hop_size) : h.hop_size - 1) * alpha;
  }
  return out;
}

// Per group(boundary) — a package's links, or a node's NICs — averaged over
// the groups. The hop's fan-out at a level is the topology's where the
// level carries bytes, 1 elsewhere; q of the hop's ranks share one group,
// so members / q hop groups pass through each.
//   direct  every rank receives its bytes from outside straight: members x outside
//   ring    each chain enters the group once and its entry link carries
//           everything a rank receives: (members / q) x all bytes
//   tree    the binomial reduce sends the whole buffer M across a level-l
//           boundary (f_l - 1) times per level-l group, spread over the G
//           groups a hop group spans; then the root sends every rank its
//           piece M / hop size, which crosses in for the (G - 1) / G of the
//           ranks outside the root's group
//   halving every rank receives its halving_bytes of the outer levels: members x those
double hop_ingress(const HopTransfer& h, const Topology& topo, const System& sys, Level boundary) {
  const int b = static_cast<int>(boundary);
  double outside = 0, all = 0, members = 1, q = 1;
  for (int l = 0; l < kNumLevels; ++l) {
    const double bytes = static_cast<double>(h.bytes[l]);
    all += bytes;
    if (l > b) outside += bytes;
    if (l <= b) members *= topo.fanout(static_cast<Level>(l)), q *= bytes > 0 ? topo.fanout(static_cast<Level>(l)) : 1;
  }
  if (outside == 0) return 0;
  switch (hop_algorithm(h, sys)) {
    case HopAlgorithm::direct: return members * outside;
    case HopAlgorithm::ring: return members / q * all;
    case HopAlgorithm::halving: {
      const auto per_level = halving_bytes(h, topo);
      double crossing = 0;
      for (int l = b + 1; l < kNumLevels; ++l) crossing += per_level[l];
      return members * crossing;
    }
    case HopAlgorithm::tree: {
      double crossings = 0, spanned = 1, above = 1;  // crossing transfers of M per hop group; groups(boundary) per hop group
      for (int l = kNumLevels - 1; l > b; --l) {
        const double f = h.bytes[l] > 0 ? topo.fanout(static_cast<Level>(l)) : 1;
        crossings += (f - 1) * above;
        above *= f;
        spanned *= f;
      }
      const double whole = hop_buffer(h);
      return members / q * whole * crossings / spanned + members * whole / h.hop_size * (spanned - 1) / spanned;
    }
  }
  return 0;
}

}  // namespace tierzero
