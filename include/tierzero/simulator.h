// Step-time and memory model, version 4 (docs/simulator.md). For a model,
// a system, a rank count, a batch, a plan and a training engine it predicts:
//   compute   operation by operation (src/sim/op_list.h, compute_model.h):
//             every GEMM of forward, backward and recomputation by a roofline
//             with its shape's tile and wave quantisation, attention at its
//             implementation's measured rate, every memory-bound operation
//             (norms, activations, residuals, RoPE, softmax, the loss, the
//             embedding, the optimizer) by the bytes it moves, each kernel
//             at least the launch floor; the figures are the System's
//             DeviceSpec (tierzero/device.h), the kernels the engine's
//   comm      every hop of every collective of the plan (traffic_model.h),
//             priced by hop_time (rings or direct exchange), the gradient
//             reductions in the engine's bytes and, where it accumulates
//             locally, once per step; quantisation kernels at memory bandwidth
//   calls     every collective call costs its hop's latency per peer and the
//             system's call overhead; DeepSpeed issues one gather per
//             parameterised module, each priced at the module's size
//   overlap   forward gathers hide under forward compute, backward gathers
//             and reductions under backward compute, each kind by the
//             system's overlap times the engine's; compute beside them slows
//             by the engine's overlap_slowdown; exposed: what does not hide,
//             the first unit's gather, the last bucket's reduction and the
//             step's own collectives
//   memory    src/sim/memory_model.h: states in the engine's bytes, gathered
//             units, saved activations, logits, the allocator's reserve and
//             the runtime; offloaded states (Plan::optim_offload,
//             param_offload) in host memory or files, their transfers paid
//             in the step, not overlapped
// Pure function; every constant comes from the System, the engine or the
// device files (data/devices, data/engines: each with its source).
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tierzero/engine.h"
#include "tierzero/mesh_shape.h"
#include "tierzero/model_code.h"
#include "tierzero/plan.h"
#include "tierzero/system.h"
#include "tierzero/train_config.h"

namespace tierzero {

// Activation recomputation (activation checkpointing) as the engines offer
// it: none; full: every block keeps only its input and recomputes its
// forward in backward; every N: one block in N does so, the others keep
// everything; selective: the attention core is recomputed, its s x s
// intermediates not kept (Korthikanti et al. 2022, "Reducing activation
// recomputation in large transformer models"); selective-op: torchtitan's
// per-operation policy, each block keeping the attention's output and every
// other matmul's, recomputing the rest (torchtitan
// models/llama/parallelize_llama.py, _save_list). Value type.
struct Recompute {
  enum class Kind { none, full, every, selective, ops };
  Kind kind = Kind::none;
  int every = 1;  // Kind::every: one block in `every`
  // "none", "full", "selective", "selective-op", "every:N"; also "true"
  // (full) and "false" (none). Throws ConfigError naming the forms.
  static Recompute parse(std::string_view s);
  std::string name() const;
  std::string kind_name() const;  // name() without every's N
  bool any() const { return kind != Kind::none; }
  bool operator==(const Recompute&) const = default;
};

// Pipeline parallelism as Megatron-LM, torchtitan and DeepSpeed run it
// (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on
// GPU Clusters Using Megatron-LM", section 2.2): `stages` ranks along one
// level (`level`; by default the outermost the topology declares) hold
// consecutive blocks each; a step's micro-batches (SimInput::grad_accum)
// flow through them in the 1F1B schedule, or, with virtual_stages > 1,
// interleaved: each rank holds that many chunks of layers / (stages x
// virtual_stages) blocks. `split` says how the layers fall on the stages
// (sim/pipeline.h, stage_layers): even (Megatron-LM's default: stages x
// virtual_stages divide the layers); ends (Megatron-Core's
// --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers:
// first_layers and last_layers on the end stages, the rest evenly over the
// others); embedding (Megatron-DeepSpeed's --pp-partition-method
// 'type:transformer|embedding': DeepSpeed's PipelineModule balances the
// blocks with the embedding and the tied head counted as one layer each).
// The data-parallel ranks are the world's with the pipeline (and the tensor
// group) factored out. Value type.
struct PipelineShape {
  enum class Split { even, ends, embedding };
  int stages = 1;
  int virtual_stages = 1;
  std::optional<Level> level;
  Split split = Split::even;
  int first_layers = 0, last_layers = 0;  // Split::ends
  // The stage simulate() prices (set by sim/pipeline.h's pipeline_stages, 0 otherwise): 0 the end stages (the
  // first's embedding with the last's head, as today's one stage), s > 0 interior stage s, without either.
  int priced_stage = 0;
  Level level_in(const Topology& world) const;
  // The world with the level's fan-out divided by the stages; throws
  // ConfigError naming the values when stages < 1, the level is one the
  // world lacks, or the stages do not divide its fan-out.
  Topology data_topology(const Topology& world) const;
  // "1f1b" or "interleaved:V" (V >= 2 virtual stages per rank).
  std::string schedule() const;
  // Sets virtual_stages from a schedule's name; throws ConfigError naming the forms.
  void set_schedule(std::string_view name);
  // "even", "ends:F,L" or "embedding".
  std::string split_name() const;
  // Sets split (and first_layers, last_layers) from its name; throws ConfigError naming the forms.
  void set_split(std::string_view name);
  bool operator==(const PipelineShape&) const = default;
};

// Context parallelism (Megatron-Core's context_parallel_size, torchtitan's
// context_parallel_degree, DeepSpeed-Ulysses' sequence_parallel_size):
// `degree` ranks on one level split every sequence, each holding seq/degree
// of its tokens through the GEMMs, norms and activations, and exchange what
// attention needs: ring (Megatron-Core's cp_comm_type p2p, Liu et al. 2023
// "Ring Attention"): each member's keys and values pass around the group in
// degree - 1 point-to-point steps overlapped with the attention blocks, two
// chunks per member balancing the causal mask; a2a (DeepSpeed-Ulysses,
// Jacobs et al. 2023): all-to-alls trade the sequence split for a head
// split around the attention, on the critical path. The group lies on
// `level` (by default the innermost level with ranks left after the tensor
// group and the pipeline's stages: Megatron's order tp-cp-dp-pp), and it
// stays in the data-parallel ranks the plan partitions over: the engines
// reduce the gradients (and shard the states) over dp x cp ranks
// (docs/simulator.md, "Context parallelism"). Value type.
struct ContextShape {
  enum class Kind { ring, a2a };
  int degree = 1;
  Kind kind = Kind::ring;
  std::optional<Level> level;
  // Its level among `ranks` (the world with the tensor group and the
  // pipeline's stages factored out): `level`, else the innermost with more than one rank.
  Level level_in(const Topology& ranks) const;
  std::string kind_name() const;  // "ring" or "a2a"
  // "ring" or "a2a"; throws ConfigError naming the forms.
  static Kind parse_kind(std::string_view name);
  bool operator==(const ContextShape&) const = default;
};

struct SimInput {
  GptConfig model;
  System system;
  int ranks = 8;    // the job's ranks (the world)
  MeshShape mesh;   // tensor x data parallelism over them (tierzero/mesh.h; tp = 1: every rank data-parallel)
  PipelineShape pipeline;  // stages = 1: no pipeline
  ContextShape context;    // degree = 1: no context parallelism
  int micro_batch = 1;
  int seq_len = 0;  // 0: the model's context
  int grad_accum = 1;
  Plan plan;
  DType dtype = DType::bf16;  // the working parameters (tierzero's param_dtype)
  bool fp8 = false;           // the linear layers' GEMMs in FP8 (Transformer Engine, torchao)
  Recompute recompute;
  // The layout's inner fan-outs ("package=2,node=4"; world inferred from
  // ranks), for systems that leave them open (cpu) or to override theirs;
  // "" = the system's. Every level it declares must be one of the system's.
  std::string topology_spec;
  EngineProfile engine = engine_profile("tierzero");
  std::string attention;  // overrides the engine's implementation when not ""
  ModelCode model_code;   // how the layers' code writes its norms and rotary embedding (default: the engine's kernels)
  Topology topology() const;       // the job's
  Topology data_topology() const;  // the data-parallel ranks' (pipeline's, then mesh's): what the plan partitions over; throws ConfigError
  // The attention implementation priced: `attention` when given, else the
  // engine's where the device has a rate for it, else "eager" (PyTorch's
  // SDPA falls back to its math kernel where no fused one runs: a CPU, a V100).
  std::string attention_implementation() const;
};

struct SimResult {
  double step_time_s = 0, compute_s = 0, comm_s = 0, exposed_comm_s = 0, quant_s = 0;
  // The compute by kind (every micro-batch of the step): GEMMs, attention,
  // memory-bound operations, recomputation's share of them, the optimizer.
  double gemm_s = 0, attention_s = 0, memory_ops_s = 0, recompute_s = 0, optimizer_s = 0;
  double forward_s = 0, backward_s = 0;  // the same by pass (backward with its recomputation), without the optimizer
  // Pipeline parallelism (SimInput::pipeline): the schedule's bubble (in
  // compute_s: its slots are a micro-batch's compute and exposed tensor and
  // context collectives) and its point-to-point transfers of activations and
  // their gradients between stages, on the critical path (in step_time_s).
  double pipeline_bubble_s = 0, pipeline_p2p_s = 0;
  // Tensor parallelism (SimInput::mesh): the tensor group's collectives on
  // the critical path, every micro-batch's: their time less what runs under
  // the GEMMs beside them (in exposed_comm_s).
  double tensor_exposed_s = 0;
  // Context parallelism (SimInput::context): the time of its exchanges (in
  // comm_s), and the part on the critical path (in step_time_s): the ring's
  // steps whose transfer outlasts the attention block beside it, by the
  // difference; every all-to-all.
  double context_comm_s = 0, context_exposed_s = 0;
  double overlappable_s = 0;  // prefetched gathers and bucketed reductions (with their quantisation), which may run under compute
  Overlap overlappable_by_kind{0, 0, 0};  // the same split by kind: forward gathers, backward gathers, reductions
  std::uint64_t collective_calls = 0;     // per step
  // Physical bytes per step (hop_ingress): into one package through its
  // links, and into one node through its network interfaces, averaged.
  double package_link_bytes = 0, node_nic_bytes = 0;
  double tflops_per_device = 0;
  double tokens_per_s_per_device = 0;
  // Per level: transfer time of the hops that level bounds, latency of the
  // hops whose slowest latency is that level's, quantisation of those hops.
  std::array<double, kNumLevels> comm_time_s{}, latency_s{}, quant_time_s{};
  std::array<std::uint64_t, kNumLevels> bytes_per_level{};
  // Device memory by part: params, bwd_params, grads, optim (the plan's
  // states), gathered (units gathered at once), activations, logits,
  // runtime (the allocator's reserve and the runtime's fixed bytes).
  std::vector<std::pair<std::string, double>> memory_bytes;
  double memory_total = 0;                                   // their sum: what must fit the device
  double host_bytes = 0, file_bytes = 0;                     // the offloaded states' (host memory, NVMe files)
  double offload_s = 0;                                      // their part of the step (included in step_time_s)
  bool fits = false;
  // The largest allocation the step repeats for every block (its gathered
  // weights, its gradient at the reduction's bytes, its MLP hidden), and
  // whether the plan fits with fewer bytes than that left free under an
  // engine whose caching allocator holds blocks (allocator_reserve > 0). At
  // that limit the allocator cannot place the allocation beside its cache:
  // it frees every cached block and retries (PyTorch's cudaMalloc retries),
  // a device synchronisation each, block after block, so the step runs
  // slower than step_time_s by an amount the model does not price: the
  // predicted throughput is an upper bound. (The loss's logits, allocated
  // once per micro-batch, would cost one retry, not one per block.)
  double largest_allocation = 0;
  bool at_memory_limit = false;
  // Sets fits and at_memory_limit for a device of `capacity` bytes under engine `e`.
  void judge_memory(double capacity, const EngineProfile& e);
};

SimResult simulate(const SimInput& in);

// Throws ConfigError naming the values when `in`'s context parallelism
// cannot run at `seq_len`: an engine without it or without its kind; tp x
// pp x cp not dividing the ranks (dp = ranks / (tp pp cp) must be whole); a
// level the job lacks or whose ranks (after the tensor group and the
// stages) cp does not divide; ring: the sequence not divisible by 2 cp
// (two chunks per member), or eager attention (the ring runs in a fused
// attention kernel); a2a: the sequence not divisible by cp, or the query or
// key/value heads per tensor-parallel member not divisible by cp. Nothing
// at degree 1.
void check_context(const SimInput& in, int seq_len);

// The time of one all-gather or reduce-scatter over every rank of `topo`
// with a per-rank shard of `shard_bytes`, decomposed by `spec`: the sum of
// its hops' transfer and latency (src/sim/hop_time.h) plus the
// system's call overhead per hop.
double collective_time(Collective k, const Topology& topo, const HopSpec& spec, std::uint64_t shard_bytes, const System& sys);

}  // namespace tierzero
