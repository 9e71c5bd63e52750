// The bytes a rank moves in one training step under a plan, collective by
// collective and hop by hop (docs/algorithms.md, "The engine"). The engine's
// counters must equal these numbers (tests/engine_mpi_test.cc) and the
// simulator prices them with an α–β cost per level.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "tierzero/gpt_config.h"
#include "tierzero/plan.h"
#include "tierzero/train_config.h"

namespace tierzero {

enum class Phase { forward, backward, reduce, step };
enum class Collective { all_gather, reduce_scatter, all_reduce, all_to_all };

// One hop of one collective: the bytes this rank receives per level, the
// number of ranks in the hop, and how many times it happens per step.
struct HopTransfer {
  Phase phase;
  Collective collective;
  int hop_size = 1;
  std::array<std::uint64_t, kNumLevels> bytes{};
  std::uint64_t quantized_bytes = 0;  // elements (de)quantised by this rank for this hop, in bytes of the dtype
  int unit = -1;  // the unit whose weights a forward/backward gather fetches (-1: buckets and the step's own)
};

// All hop transfers of one step for rank `rank` (ranks differ only in the
// uneven chunks of a flat all-reduce).
std::vector<HopTransfer> step_transfers(const Plan& plan, const Topology& topo, const TrainConfig& cfg, int rank);
std::array<std::uint64_t, kNumLevels> total_bytes(const std::vector<HopTransfer>& t);

}  // namespace tierzero
