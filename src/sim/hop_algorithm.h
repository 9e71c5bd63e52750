// How the system's collective library moves one hop (docs/simulator.md):
// shared by the hop's time (simulator.cc) and its physical bytes
// (physical_bytes.cc).
#pragma once
#include "tierzero/system.h"
#include "tierzero/traffic_model.h"

namespace tierzero {

// ring: NCCL/RCCL's all-gather, reduce-scatter, all-reduce and Open MPI's
// all-reduce; direct: every all-to-all and Open MPI's all-gather; tree:
// Open MPI's reduce-scatter (a binomial reduce to one rank, then a scatter).
enum class HopAlgorithm { ring, direct, tree };

inline HopAlgorithm hop_algorithm(const HopTransfer& h, const System& sys) {
  if (h.collective == Collective::all_to_all) return HopAlgorithm::direct;
  if (sys.collectives == CollectiveLibrary::mpi && h.collective == Collective::all_gather) return HopAlgorithm::direct;
  if (sys.collectives == CollectiveLibrary::mpi && h.collective == Collective::reduce_scatter) return HopAlgorithm::tree;
  return HopAlgorithm::ring;
}

// M: the hop's buffer, hop-size pieces of which a rank receives all but its own.
inline double hop_buffer(const HopTransfer& h) {
  double b = 0;
  for (std::uint64_t x : h.bytes) b += static_cast<double>(x);
  return h.hop_size > 1 ? b * h.hop_size / (h.hop_size - 1) : 0.0;
}

}  // namespace tierzero
