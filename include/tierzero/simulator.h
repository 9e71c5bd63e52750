// Step-time and memory model (docs/simulator.md). For a model, a system,
// a rank count, a batch and a plan it predicts:
//   compute   model FLOPs / (peak * compute_efficiency)            (x 4/3 with recomputation)
//   comm      every hop of every collective of the plan (traffic_model.h)
//             priced by hop_time (rings or direct exchange, below), plus
//             quantisation kernels at memory bandwidth (read + write)
//   calls     every collective call costs its hop's latency per peer and the
//             system's call_overhead plus the engine's: tierzero issues one
//             call per unit and hop, DeepSpeed one per parameterised module,
//             each priced at the module's size (EngineModel)
//   overlap   forward/backward gathers and gradient buckets run beside the
//             compute: step = compute + overlappable + exposed
//             - o * min(compute, overlappable), o the overlaps of the three
//             kinds (System::overlap x the engine's) weighted by their
//             times (all 1: max(compute, overlappable) + exposed), exposed =
//             the first unit's gather, the last bucket's reduction and the
//             step's own collectives
//   memory    params, bwd_params, grads, optim by the engine's formulas;
//             activations per layer s*b*h*(34 + 5*a*s/h) bytes, or 2*s*b*h
//             with recomputation (Korthikanti et al. 2022, "Reducing
//             activation recomputation in large transformer models"), plus
//             fp32 logits and their gradient; buffers: prefetch slots and
//             two gradient buckets. With the optimizer offloaded
//             (Plan::optim_offload) its 12 bytes per parameter of the shard
//             leave the device (the ZeRO papers' K = 12: fp32 master, m and
//             v, Rajbhandari et al. 2020 and 2021) for host memory (cpu) or
//             files (nvme, with its host buffers), and the step pays, not
//             overlapped: 16-bit gradients down and parameters up over the
//             host link, the update at host memory bandwidth (28 bytes per
//             parameter: p, g, m, v read, p, m, v written) and, for nvme,
//             the state read and written (24 bytes) at the NVMe rate. With
//             the parameters offloaded (Plan::param_offload) their 2 bytes
//             per parameter of the shard leave the device too (the hpZ
//             copy to host memory in either case, the shard to files with
//             nvme, with its buffers on the host), and the step pays, also
//             not overlapped (an upper bound: the engine reads ahead):
//             each micro-batch's forward read of the shard and backward
//             read of all its units but the embedding (from the hpZ copy,
//             which forward writes, when there is one) and the update's
//             write, over the host link, and for nvme the shard's reads
//             and write at the NVMe rate.
// Pure function; every constant comes from the System (sources in presets.cc).
#pragma once
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "tierzero/plan.h"
#include "tierzero/system.h"
#include "tierzero/train_config.h"

namespace tierzero {

// The training engine whose call pattern is priced: tierzero's (one
// collective per unit and hop) or DeepSpeed's ZeRO-3/ZeRO++ (a fetch per
// parameterised submodule, docs/simulator.md).
enum class Engine { tierzero, deepspeed };
std::string_view engine_name(Engine e);
Engine parse_engine(std::string_view s);  // throws ConfigError

// What an engine adds to a system's figures. fetch_per_module: a unit's
// weight gather runs as one collective per parameterised module (its
// weight and bias), each priced at its own size, instead of one per unit;
// overlap scales the system's; call_overhead_s is paid per call.
struct EngineModel {
  bool fetch_per_module = false;
  Overlap overlap;
  double call_overhead_s = 0;
};
EngineModel engine_model(Engine e);

struct SimInput {
  GptConfig model;
  System system;
  int ranks = 8;
  int micro_batch = 1;
  int seq_len = 0;  // 0: the model's context
  int grad_accum = 1;
  Plan plan;
  DType dtype = DType::bf16;
  bool recompute = false;
  // The layout's inner fan-outs ("package=2,node=4"; world inferred from
  // ranks), for systems that leave them open (cpu) or to override theirs;
  // "" = the system's. Every level it declares must be one of the system's.
  std::string topology_spec;
  Engine engine = Engine::tierzero;
  Topology topology() const;
};

struct SimResult {
  double step_time_s = 0, compute_s = 0, comm_s = 0, exposed_comm_s = 0, quant_s = 0;
  double overlappable_s = 0;  // prefetched gathers and bucketed reductions (with their quantisation), which may run under compute
  Overlap overlappable_by_kind{0, 0, 0};  // the same split by kind: forward gathers, backward gathers, reductions
  std::uint64_t collective_calls = 0;     // per step
  // Physical bytes per step (hop_ingress): into one package through its
  // links, and into one node through its network interfaces, averaged.
  double package_link_bytes = 0, node_nic_bytes = 0;
  double tflops_per_device = 0;
  // Per level: transfer time of the hops that level bounds, latency of the
  // hops whose slowest latency is that level's, quantisation of those hops.
  std::array<double, kNumLevels> comm_time_s{}, latency_s{}, quant_time_s{};
  std::array<std::uint64_t, kNumLevels> bytes_per_level{};
  std::vector<std::pair<std::string, double>> memory_bytes;  // device: params, bwd_params, grads, optim, activations, buffers
  double memory_total = 0;                                   // their sum: what must fit the device
  double host_bytes = 0, file_bytes = 0;                     // the offloaded states' (host memory, NVMe files)
  double offload_s = 0;                                      // their part of the step (included in step_time_s)
  bool fits = false;
};

SimResult simulate(const SimInput& in);

// The time of one all-gather or reduce-scatter over every rank of `topo`
// with a per-rank shard of `shard_bytes`, decomposed by `spec`: the sum of
// its hops' transfer and latency (src/sim/hop_time.h) plus the
// system's call overhead per hop.
double collective_time(Collective k, const Topology& topo, const HopSpec& spec, std::uint64_t shard_bytes, const System& sys);

}  // namespace tierzero
