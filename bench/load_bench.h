// Peak host memory of loading a sharded run's state, on every rank: the
// ShardedTrainer built from --init weights (or the seed), then, when asked,
// a checkpoint resumed into it and one saved from it, with no training
// step between. Each rank's peak resident set (VmHWM of /proc/self/status)
// after building and after resuming, beside the bytes its state's shards
// hold. bench/load_memory.py runs it for docs/formats.md ("Loading in
// bounded memory"). Collective over `world`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tierzero/communicator.h"
#include "tierzero/plan.h"
#include "tierzero/train_config.h"

namespace tierzero::bench {

struct LoadBenchOptions {
  std::string init;      // weights to start from ("" = the seed's)
  std::string resume;    // a checkpoint to resume into the trainer ("" = none)
  std::string save_dir;  // where to save a checkpoint after loading ("" = no save)
};

struct LoadBenchResult {
  double build_s = 0, resume_s = 0, save_s = 0;
  bool resharded = false;
  // Per rank, in world order: peak resident bytes after building (init
  // included) and after resuming (= after building without --resume), and
  // the bytes held by the state's shards in host memory (params,
  // bwd_params, grads, optim and their *_host parts; memory_bytes()).
  std::vector<std::uint64_t> peak_build, peak_resume, shard_bytes;
};

LoadBenchResult run_load_bench(const TrainConfig& cfg, const Plan& plan, Communicator& world, const LoadBenchOptions& o);
std::string to_json_line(const TrainConfig& cfg, const Plan& plan, const LoadBenchOptions& o, const LoadBenchResult& r);

// Writes under `dir`, in this one process, the checkpoint that a run of
// `plan` on `topo` built from the weights at `init` would save before its
// first step (write_state_checkpoint: rank after rank, unit by unit), for
// layouts whose ranks this machine could not hold at once. Returns a JSON
// line: the step directory, the seconds, this process's peak resident set.
std::string write_start_checkpoint(const TrainConfig& cfg, const Plan& plan, const Topology& topo, const std::string& init,
                                   const std::string& dir);

}  // namespace tierzero::bench
