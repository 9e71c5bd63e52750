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

// tensor: a tensor-parallel collective (sim/tensor_traffic.h), issued by the
// model between its operations: on the compute's critical path, never hidden.
// pipeline: a stage's activation or gradient to the next (sim/pipeline.h).
// context: a context-parallel exchange around attention (sim/context_parallel.h).
enum class Phase { forward, backward, reduce, step, tensor, pipeline, context };

// One hop of one collective: the bytes this rank receives per level, the
// number of ranks in the hop, and how many times it happens per step.
struct HopTransfer {
  Phase phase;
  Collective collective;
  int hop_size = 1;
  std::array<std::uint64_t, kNumLevels> bytes{};
  std::uint64_t quantized_bytes = 0;  // elements (de)quantised by this rank for this hop, in bytes of the dtype
  int unit = -1;  // the unit whose weights a forward/backward gather fetches (-1: buckets and the step's own)
  // Pipelined hops (plan key hop_chunk_bytes): the collective's chunks, each
  // hop a call per chunk, and this hop's place among the collective's
  // consecutive entries (hop_index 0 .. hops - 1). 1 chunk: whole.
  int chunks = 1;
  int hop_index = 0, hops = 1;
};

// A tensor-parallel member (tierzero/mesh.h at tp > 1): its slices, and the
// job's whole world and its rank there, over which the step's control values
// (the loss and the squared gradient norm) are summed. Value type.
struct TensorMember {
  TpShard shard;
  Topology world;
  int world_rank = 0;
};

// All hop transfers of one step for rank `rank` (ranks differ only in the
// uneven chunks of a flat all-reduce) of the data-parallel states' layout
// `topo`: the whole model's, or a tensor-parallel member's (`member`; its
// tensor group's own all-reduces are sim/tensor_traffic.h's).
std::vector<HopTransfer> step_transfers(const Plan& plan, const Topology& topo, const TrainConfig& cfg, int rank,
                                        const TensorMember* member = nullptr);
std::array<std::uint64_t, kNumLevels> total_bytes(const std::vector<HopTransfer>& t);

// A flat all-reduce of `n` elements of `esize` bytes over `members` (ranks of
// `t`, in rank order) as the communicators count it: `me` receives its own
// chunk's partial sums and every other member's result chunk from each peer.
void flat_all_reduce(std::vector<HopTransfer>& out, Phase ph, const Topology& t, const std::vector<int>& members, int me, std::size_t n,
                     std::size_t esize);

// The hops of one all-gather or reduce-scatter over every rank of `topo`,
// decomposed by `spec`, with a per-rank shard of `shard_bytes` (an
// all-gather's input, a reduce-scatter's output): outermost hop first, as
// the engine's weight gathers run (a reduce-scatter runs them in reverse
// order, with the same bytes).
std::vector<HopTransfer> collective_hops(Collective k, const Topology& topo, const HopSpec& spec, std::uint64_t shard_bytes);

}  // namespace tierzero
