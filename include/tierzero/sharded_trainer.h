// The sharding engine (docs/architecture.md: one training step): trains a GptModel on every
// rank of a mesh (tierzero/mesh.h) under any valid Plan, which partitions
// the states over the mesh's data-parallel ranks.
//
// Per micro-batch, forward fetches each parameter unit (all-gather of the
// `params` shards over group(params), quantised with qwZ when the plan
// says so, decomposed over the plan's hops), prefetching `prefetch` units
// ahead on a communication thread, computes, keeps this rank's slice of the
// unit as the `bwd_params` secondary copy when that state is partitioned
// more narrowly (hpZ; hier3's package copy), and releases the unit.
// Backward fetches from `bwd_params`, computes into a unit gradient, packs
// it into a bucket and reduces each full bucket (reduce-scatter, qgZ when
// quantised; all-reduce across the cross group for MiCS; all-reduce for
// DDP) while the next units compute; the results accumulate in the fp32
// `grads` partition. The step: global gradient norm, clipping, AdamW on the
// fp32 master shard in the `optim` partition, new parameters written back
// (all-gathered when params are replicated). fp16 parameters use dynamic
// loss scaling and skip steps with non-finite gradients.
//
// All buffers are allocated at construction; the steady-state step
// allocates nothing. Collective over the mesh's world communicator; one
// instance per rank, used from one thread.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tierzero/backend.h"
#include "tierzero/communicator.h"
#include "tierzero/mesh.h"
#include "tierzero/plan.h"
#include "tierzero/state_reader.h"
#include "tierzero/trainer.h"

namespace tierzero {

// Where one step's time went on one rank (--breakdown; DeepSpeed's
// wall_clock_breakdown). The training thread either computes or waits on
// the rank's communication schedule; each wait is split by what the
// schedule's executor did meanwhile: a collective on one level's links,
// quantisation, or local work (conversions, copies, fences), for parameter
// gathers, gradient reductions or control values (loss, norm). On a GPU,
// kernels run asynchronously: the split is of host time. Plain values.
struct StepBreakdown {
  static constexpr int kKinds = 3;                // gather, reduce, control
  static constexpr int kPhases = 2 + kNumLevels;  // local, quant, package, node, world
  using Table = std::array<std::array<double, kPhases>, kKinds>;
  double step_s = 0;
  // The training thread's time not spent waiting.
  double forward_s = 0, backward_s = 0, optimizer_s = 0;
  // The training thread blocked, by what it waited for (a free schedule slot: queuing into a full ring; tensor: the
  // tensor-parallel group's collectives the model calls, 0 at tp 1).
  double gather_wait_s = 0, reduce_wait_s = 0, control_wait_s = 0, slot_wait_s = 0, tensor_wait_s = 0;
  // The executor's time during those waits (exposed) and over the whole step (busy: exposed + hidden), [kind][phase].
  Table exposed{}, busy{};
  // Of the gather waits: time the executor spent on reductions queued before the gather.
  double gather_behind_reduce_s = 0;
};

class ShardedTrainer final : public Trainer {
 public:
  // `mesh` (and its world) and `data` must outlive the trainer. `init`: the
  // state to start from (tierzero/state_reader.h: weights files, or any
  // state source), of which each rank reads only the slices of its own
  // shards, unit by unit; null = gpt_init(cfg.seed), computed likewise.
  // Used only during construction. `backend`: where the state lives and the
  // model runs (backend/backend_impl.h); the mesh's world must reach its
  // memory (MPI for the CPU, NCCL for CUDA). Throws ConfigError for an
  // invalid plan or configuration, FormatError on every rank alike when a
  // rank's slices cannot be read (naming the file and tensor).
  ShardedTrainer(const TrainConfig& cfg, const Plan& plan, const Mesh& mesh, const TokenData& data, StateReader* init = nullptr,
                 const Backend& backend = cpu_backend());
  // The same over Mesh(world): every rank data-parallel (tp = 1).
  ShardedTrainer(const TrainConfig& cfg, const Plan& plan, Communicator& world, const TokenData& data, StateReader* init = nullptr,
                 const Backend& backend = cpu_backend());
  ~ShardedTrainer() override;
  StepStats step() override;
  std::int64_t steps_done() const override;
  MatmulType matmul() const override;
  double evaluate(const TokenData& val, int batches) override;

  const Plan& plan() const;
  // Bytes this rank holds per state: params, bwd_params, grads, optim,
  // buffers (gather slots and buckets), embed (a tied head's whole
  // embedding and its gradient, held for the step; 0 when untied),
  // activations; optim_host and optim_file when the optimizer is offloaded.
  std::vector<std::pair<std::string, std::uint64_t>> memory_bytes() const;
  // Bytes this rank received per level during the last step.
  std::array<std::uint64_t, kNumLevels> last_step_bytes() const;
  // The full fp32 master parameters (collective; allocates: for tests and export); at tp > 1
  // this rank's member's arena (GptLayout(cfg.model, TpShard{tp, tp_rank})).
  std::vector<float> gather_master();
  float loss_scale() const;
  // Where this rank's last step went, and every rank's (collective, through the schedule).
  const StepBreakdown& last_breakdown() const;
  std::vector<StepBreakdown> gather_breakdowns();

  // Writes a checkpoint of the state before steps_done() into
  // dir/step-NNNNNNNN (atomically; docs/formats.md) and keeps the newest
  // `keep` of those this trainer wrote (0 = all; other runs' checkpoints
  // are never removed, and the save directory's `latest` always names the
  // one just written). Collective. Returns the step directory.
  std::string save_checkpoint(const std::string& dir, int keep);
  // The same checkpoint, asynchronously (--async-save): the temporary
  // directory and a host snapshot of this rank's shards now (collective;
  // a previous save still in flight is completed first, so at most one is
  // in flight), the files from a background thread while training goes on.
  // The checkpoint is not `latest` until complete_save finishes it.
  void begin_save(const std::string& dir, int keep);
  // Finishes a save in flight once this rank's writer is done: as
  // save_checkpoint does, meta.json with every shard's checksum, the rename
  // and `latest`. Collective. Returns the step directory it completed, ""
  // when there was none. A process killed before it leaves `latest` at the
  // previous complete checkpoint.
  std::string complete_save();
  // Whether a save begun by begin_save is still in flight on this rank.
  bool save_in_flight() const;
  // What the saves since the last call want the user told (rank 0's: e.g. a
  // save directory holding another run's newer checkpoints); the caller prints them.
  std::vector<std::string> take_warnings();
  // Restores a checkpoint (a step directory or a save directory's latest).
  // Same ranks, topology, plan and dtype: each rank reads its own shard
  // files and training continues bit for bit; otherwise each rank reads
  // the slices of its new shards from the saved optim shards (master, m,
  // v; the working parameters are the master in the param dtype). Either
  // way unit by unit: a rank holds its shards and one unit's slices, never
  // the whole model (topologies compare as parsed, so a checkpoint that
  // spells a level the old way is still the same layout). Returns whether
  // it re-partitioned. Throws FormatError on every rank alike, naming the
  // file, for a missing, truncated or corrupt shard or a checkpoint of
  // another model.
  bool load_checkpoint(const std::string& path);
  // The end of a step, collective: one control all-reduce (through the
  // schedule, outside any step's byte count) says whether `stop` is true on
  // some rank (a preemption request that reached one rank) and, while a
  // save is in flight, whether every rank's writer has finished; then that
  // save is completed (complete_save). Returns whether some rank asked to stop.
  bool step_boundary(bool stop);

  struct Impl;  // src/sharded/sharded_trainer_impl.h

 private:
  std::unique_ptr<Mesh> own_mesh_;  // the world's tp = 1 mesh, when constructed from a world
  std::unique_ptr<Impl> impl_;
};

}  // namespace tierzero
