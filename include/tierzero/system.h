// A system: the levels of a machine with the link each rank has at that
// level, plus device memory and peak FLOP/s per rank. Presets carry public
// vendor/facility figures (sources in src/topo/presets.cc); TOML files
// describe any other machine and are what `tierzero bench comm
// --write-system` writes. Value type.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tierzero/device.h"
#include "tierzero/topology.h"

namespace tierzero {

// One measured point of a level's achieved collective bandwidth: a
// collective among `participants` ranks moving `bytes` per rank (the
// per-rank shard: an all-gather's input, a reduce-scatter's output)
// reached `bandwidth_Bps` per rank at this level. `collective`: the kind
// measured (none: every kind, as `bench comm --write-system` measures).
// `groups`: how many groups of the level below the collective spanned
// (nodes, at the world level); a level's table is keyed either by groups
// (every point gives them) or by participants (none does).
struct RatePoint {
  RatePoint() = default;
  RatePoint(int participants, double bytes, double bandwidth_Bps, std::optional<Collective> collective = std::nullopt, int groups = 0)
      : participants(participants), bytes(bytes), bandwidth_Bps(bandwidth_Bps), collective(collective), groups(groups) {}
  int participants = 2;
  double bytes = 0;
  double bandwidth_Bps = 0;
  std::optional<Collective> collective;
  int groups = 0;
  bool operator==(const RatePoint&) const = default;
};

// What a hop asks of a level's table: its kind, its ranks, the groups of
// the level below it spans at this level, and its per-rank shard.
struct RateQuery {
  Collective collective = Collective::all_gather;
  int participants = 2;
  int groups = 0;
  double bytes = 0;
};

// The link a rank uses to reach peers that differ from it at one level.
struct LinkSpec {
  Level level = Level::world;
  int fanout = 0;               // ranks per group at this level; 0 = as many as the job has (world)
  double bandwidth_Bps = 0;     // per rank, per direction, bytes/s
  double latency_s = 0;         // per message (the α of an α–β model)
  std::string source;           // where the figures come from
  // Achieved bandwidth by collective, participants (or groups) and bytes
  // per rank (empty: the link rate at every size; the presets are link-rate
  // idealisations unless their source says otherwise).
  std::vector<RatePoint> achieved;

  // The bandwidth a collective reaches. Points of the query's kind price
  // it; a kind without points of its own is priced as: all-reduce, a
  // reduce-scatter then an all-gather of the same bytes (the harmonic mean
  // of their rates); reduce-scatter by the all-gather's points and the
  // reverse; all-to-all by the all-gather's; then by the points of no kind;
  // bandwidth_Bps without any. Among the chosen points: linear in
  // log(bytes) among those of one key (groups or participants), then in
  // log(key) between the two nearest keys, clamped at the table's edges.
  double bandwidth_at(const RateQuery& q) const;
  bool keyed_by_groups() const { return !achieved.empty() && achieved.front().groups > 0; }
};

// The library that runs the collectives, which decides how their bytes
// move (docs/simulator.md): nccl (NCCL, RCCL): all-gather, reduce-scatter
// and all-reduce along rings; mpi (Open MPI's non-blocking collectives,
// libnbc, as tierzero's MPI communicator calls them): all-gather direct
// (every member sends its shard to every other), reduce-scatter as a
// binomial reduce to one rank followed by a direct scatter, all-reduce a
// ring. All-to-all is direct in both.
enum class CollectiveLibrary { nccl, mpi };

// Fraction of each kind of overlappable communication's time that hides
// under compute: the prefetched forward and backward weight gathers and
// the bucketed gradient reductions. Each is in [0, 1].
struct Overlap {
  double forward = 1.0, backward = 1.0, reduce = 1.0;
  bool operator==(const Overlap&) const = default;
};

struct System {
  std::string name;
  std::vector<LinkSpec> links;  // innermost first, one per level
  double memory_bytes = 0;      // device memory per rank
  double peak_flops = 0;        // peak dense 16-bit FLOP/s per rank (a CPU rank: its measured sgemm rate)
  double memory_bandwidth_Bps = 0;  // device memory bandwidth per rank
  // Where offloaded states go (Plan::optim_offload, Plan::param_offload),
  // per rank: the device-host link per direction (0: the same memory, CPU
  // ranks), the host memory bandwidth the optimizer's update runs at, and
  // the NVMe rate for as many bytes read as written (0: unknown; the
  // planner then skips nvme).
  double host_link_Bps = 0, host_memory_Bps = 0, nvme_Bps = 0;
  // What the device computes at, operation by operation (tierzero/device.h).
  DeviceSpec device;
  CollectiveLibrary collectives = CollectiveLibrary::nccl;
  // How much of each kind of overlappable communication hides under
  // compute. 1 on the GPU presets: collectives run on their own stream
  // beside the kernels (NCCL/RCCL), as ZeRO-3's prefetch intends; below 1
  // where ranks share cores with their own communication (CPU ranks; `bench
  // comm --write-system` measures it). The engine model scales it (sim.h).
  Overlap overlap;
  // Fixed cost of issuing one collective call (launch, host-side
  // bookkeeping), paid once per call beside the per-peer latency.
  double call_overhead_s = 0;

  // The link of `level`; throws ConfigError when the system lacks it.
  const LinkSpec& link(Level level) const;
  // The job layout for `ranks` ranks: inner fan-outs from the system, world inferred.
  // Throws TopologyError when ranks is not a multiple of the ranks per node.
  Topology topology(int ranks) const;
  std::string to_toml() const;
};

// Names of the built-in presets (docs/simulator.md): frontier, frontier-rccl,
// perlmutter-nccl, dgx-a100, dgx-a100-40, dgx-h100, dgx-h200, gh200,
// dgx2-ib1, dgx2-ib4, cpu.
std::vector<std::string> system_preset_names();
// A device's figures alone (data/devices/NAME.toml: memory, peak, bandwidth
// and [device]), as a System without links; throws ConfigError naming the devices.
System device_preset(std::string_view name);
std::vector<std::string> device_preset_names();
std::optional<System> system_preset(std::string_view name);
// Parses a system TOML document; throws ConfigError naming the bad key or value.
System parse_system_toml(std::string_view text, const std::string& origin);
// A preset name or the path of a TOML file.
System load_system(const std::string& name_or_path);
void save_system(const System& s, const std::string& path);

}  // namespace tierzero
