// A partition plan (docs/architecture.md: vocabulary, strategies as plans): for each model state the level
// it is partitioned over (split evenly, with padding, across group(level)
// and replicated across cross group(level)) or replication; the bits of the
// weight all-gather and of each hop of the gradient reduction; how the
// collectives are decomposed over the levels; bucket size and prefetch
// depth. Strategies are named presets; the engine executes any valid plan.
// Value type.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tierzero/topology.h"

namespace tierzero {

// nullopt = replicated on every rank.
using Partition = std::optional<Level>;
std::string partition_name(const Partition& p);
// "replicated", "none" or a level name; throws ConfigError.
Partition parse_partition(std::string_view s);

// |group(level)| in `topo`; 1 for a replicated state.
int partition_group_size(const Topology& topo, const Partition& p);


// Where a state offloaded from the device lives, DeepSpeed's
// offload_optimizer.device and offload_param.device: the device's memory
// (none); host memory (cpu, ZeRO-Offload); or files in a directory (nvme,
// ZeRO-Infinity), read and written unit by unit through host buffers.
enum class Offload : std::uint8_t { none, cpu, nvme };
std::string_view offload_name(Offload o);
Offload parse_offload(std::string_view s);  // "none", "cpu", "nvme"; throws ConfigError

// One state's placement: the device, and for nvme the directory of the
// swap files (one per rank) and how many host buffers the stream cycles
// through (DeepSpeed's nvme_path and buffer_count). Value type.
struct OffloadPlacement {
  Offload device = Offload::none;
  std::string nvme_path;
  int buffers = 2;
  bool offloaded() const { return device != Offload::none; }
  bool operator==(const OffloadPlacement&) const = default;
};

struct Plan {
  std::string name = "custom";
  Partition params, bwd_params, grads, optim;
  // Where the optimizer shard (fp32 master weights and AdamW's moments)
  // lives between steps: on the host the update runs there (on the CPU
  // backend the same memory, counted as host). At least 2 NVMe buffers.
  OffloadPlacement optim_offload;
  // Where the working parameter shards (params, and the bwd_params copy)
  // live: the fetcher reads each unit's shard from there before gathering
  // it, the update writes it back. Needs partitioned params (ZeRO stage 3,
  // as DeepSpeed's offload_param); the bwd_params copy stays in host memory
  // with nvme. NVMe buffers: more than prefetch.
  OffloadPlacement param_offload;
  int weight_bits = 16;        // forward all-gather of params: 16 (unquantised), 8 or 4 (qwZ)
  HopBits grad_bits;           // per hop of the gradient reduce-scatter (qgZ); all 16 = unquantised
  Decomposition gather = Decomposition::flat;  // decomposition of the weight all-gathers
  Decomposition reduce = Decomposition::flat;  // decomposition of the gradient reductions
  std::size_t quant_block = 256;            // elements per quantisation block
  std::size_t bucket_bytes = 1u << 22;      // gradient bucket: reduce once this many bytes are ready
  // Pipelined hops: each rank's part of a hierarchical collective cut into
  // chunks of this many bytes that flow through the hops as a pipeline
  // (comm/hier/hop_plan.h); 0 ("whole"): each hop on the whole message.
  std::size_t hop_chunk_bytes = 0;
  int prefetch = 1;                         // units gathered ahead of the one computing
  // Units of at most this many parameters stay whole on every rank when
  // params are partitioned (DeepSpeed's stage3_param_persistence_threshold,
  // applied per unit: a block, the embedding, the head): never gathered in
  // forward or backward, all-gathered once per step from the optimizer's
  // shards after the update. Their gradients and optimizer state stay
  // partitioned. 0: every unit partitioned.
  std::size_t persist_threshold = 0;

  // Throws ConfigError naming the problem: bwd_params wider than params,
  // grads and optim on different levels, params neither replicated nor on
  // the optim level, bad bits, a level the topology does not declare, an
  // NVMe offload without a directory or with too few buffers, parameters
  // offloaded but not partitioned.
  void validate(const Topology& topo) const;
  bool quantized() const;
  // Whether a unit of `numel` parameters is held whole (persist_threshold).
  bool persistent(std::size_t numel) const { return params && numel <= persist_threshold; }
  // Whether such a unit's working parameters are all-gathered from the
  // optimizer's shards after each update (replicated params over
  // partitioned optimizer state, or a unit held whole), rather than
  // converted from this rank's own master shard.
  bool rebuilt_after_update(std::size_t numel) const { return optim && (!params || persistent(numel)); }
  std::string describe() const;  // one line, for logs and metrics
  // The same partitions, bits, decompositions and buckets (the shards'
  // layout and the arithmetic); where the states live may differ.
  bool same_sharding(const Plan& o) const;
  bool operator==(const Plan&) const = default;
};

// A preset adapted to a topology: a level the topology does not declare
// (fan-out 1) is replaced by the next declared level outwards, e.g. hier3's
// package-level backward copy becomes node-level on a node=4,world=2 job.
Plan fit_to(const Plan& plan, const Topology& topo);

// A plan as a file (docs/formats.md, "Plan file"): a TOML `[plan]` table
// with every field of Plan (the level of each state, weight and per-hop
// gradient bits, the decompositions, quantisation block, bucket, prefetch,
// persistence threshold and the offload placements); the same table in a
// run configuration (train --config). Value type.
struct PlanFile {
  Plan plan;
  // A level the job's topology does not declare becomes the next declared
  // level outwards (fit_to), as the shipped strategies do; false: such a
  // level is an error naming the file and key.
  bool fit_to_topology = false;
  // The tensor-parallel degree and its level (tierzero/mesh.h's MeshShape: none, the innermost declared);
  // the plan's levels are then those of the data-parallel ranks.
  int tp = 1;
  std::optional<Level> tp_level;
  bool sp = false;  // sequence parallelism (MeshShape::sp)
  std::string origin;  // the file, for errors
  // The plan for a job on `topo`: fitted or checked level by level, then
  // validated. Throws ConfigError naming the file (and the key, for a level).
  Plan for_topology(const Topology& topo) const;
};

// A file holding one [plan] table and nothing else; ConfigError naming the
// file and the key for an unknown key, a malformed value or bits the
// quantiser cannot do (16, 8 or 4).
PlanFile read_plan_file(const std::string& path);
PlanFile parse_plan_file(std::string_view text, const std::string& origin);
// The [plan] table of a run configuration, when it has one (its other keys
// are TrainConfig's: tierzero/train_config.h).
std::optional<PlanFile> read_config_plan(const std::string& path);
// The text of a plan file: each line of `comment` as a TOML comment, then
// the [plan] table; parse_plan_file reads back an equal plan.
// `tp` > 1: the file also carries the mesh (tp, tp_level when given, sp when set), as PlanFile reads it.
std::string plan_file_text(const Plan& plan, bool fit_to_topology, const std::vector<std::string>& comment = {}, int tp = 1,
                           std::optional<Level> tp_level = std::nullopt, bool sp = false);
// Writes that text to `path` through a temporary file renamed over it (a
// failed write leaves what was there); ConfigError naming the path.
void write_plan_file(const std::string& path, const Plan& plan, const std::vector<std::string>& comment = {}, int tp = 1,
                     std::optional<Level> tp_level = std::nullopt, bool sp = false);

// The named strategies, plan files shipped in data/plans and compiled in
// (fit_to_topology = true): ddp, hier3, mics, zero1, zero2, zero3, zeropp.
std::vector<std::string> strategy_names();
PlanFile strategy_plan_file(std::string_view name);  // throws ConfigError naming them
Plan strategy_plan(std::string_view name);  // its plan, not yet fitted to a topology

}  // namespace tierzero
