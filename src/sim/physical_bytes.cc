// The bytes a hop moves through physical links (tierzero/sim.h, hop_ingress).
#include "sim/hop_algorithm.h"
#include "tierzero/sim.h"

namespace tierzero {

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
