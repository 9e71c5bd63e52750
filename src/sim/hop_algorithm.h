// How the system's collective library moves one hop (docs/simulator.md):
// shared by the hop's time and its physical bytes (hop_time.cc).
#pragma once
#include <array>

#include "tierzero/system.h"
#include "sim/traffic_model.h"

namespace tierzero {

// ring: NCCL/RCCL's all-gather, reduce-scatter, all-reduce, and Open MPI's
// all-reduce over a rank count that is not a power of two; direct: every
// all-to-all and Open MPI's all-gather; tree: Open MPI's reduce-scatter (a
// binomial reduce to one rank, then a scatter); halving: Open MPI's
// all-reduce over 2^k ranks, Rabenseifner's recursive-halving reduce-scatter
// and recursive-doubling all-gather, partners at distance 1, 2, 4, ... in
// rank order (what the emulated cluster's interface counters show libnbc
// doing).
enum class HopAlgorithm { ring, direct, tree, halving };

inline bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

inline HopAlgorithm hop_algorithm(const HopTransfer& h, const System& sys) {
  if (h.collective == Collective::all_to_all) return HopAlgorithm::direct;
  if (sys.collectives == CollectiveLibrary::mpi && h.collective == Collective::all_gather) return HopAlgorithm::direct;
  if (sys.collectives == CollectiveLibrary::mpi && h.collective == Collective::reduce_scatter) return HopAlgorithm::tree;
  if (sys.collectives == CollectiveLibrary::mpi && h.collective == Collective::all_reduce && power_of_two(h.hop_size))
    return HopAlgorithm::halving;
  return HopAlgorithm::ring;
}

// For halving: the bytes a rank receives across each level. The partners at
// distances [c, c f_l) differ at level l (c the product of the hop's inner
// fan-outs), and step k moves M / 2^k each way in both halves: 2 M (1/c -
// 1/(c f_l)) per level, M the all-reduced buffer.
inline std::array<double, kNumLevels> halving_bytes(const HopTransfer& h, const Topology& topo) {
  double sum = 0;
  for (std::uint64_t x : h.bytes) sum += static_cast<double>(x);
  const double m = h.hop_size > 1 ? sum * h.hop_size / (2.0 * (h.hop_size - 1)) : 0.0;
  std::array<double, kNumLevels> out{};
  double c = 1;
  for (int l = 0; l < kNumLevels; ++l) {
    if (h.bytes[l] == 0) continue;
    const double f = topo.fanout(static_cast<Level>(l));
    out[l] = 2 * m * (1 / c - 1 / (c * f));
    c *= f;
  }
  return out;
}

// M: the hop's buffer, hop-size pieces of which a rank receives all but its own.
inline double hop_buffer(const HopTransfer& h) {
  double b = 0;
  for (std::uint64_t x : h.bytes) b += static_cast<double>(x);
  return h.hop_size > 1 ? b * h.hop_size / (h.hop_size - 1) : 0.0;
}

}  // namespace tierzero
