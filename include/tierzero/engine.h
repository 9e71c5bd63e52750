// A training engine as the simulator prices it: tierzero's own, PyTorch
// FSDP (FSDP1: FullyShardedDataParallel) and FSDP2 (fully_shard), DeepSpeed
// ZeRO and Megatron-LM (docs/simulator.md, "Engines"). Each is a small
// table of behaviours: how its kernels compute (attention implementation,
// fused or eager element-wise work and loss), how it calls and overlaps its
// collectives, and what it keeps in memory. The strategies (FSDP's
// FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD; ZeRO's stages; Megatron's
// distributed optimizer) are plans, as for tierzero's engine. Every entry
// has its source (a document, a code path, or a fit with the runs it was
// fitted on). Value type.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tierzero/system.h"

namespace tierzero {

// How an engine issues a unit's weight gather: one collective per unit (a
// transformer block: tierzero, FSDP's flat parameter, FSDP2's group), or
// one per parameterised module (DeepSpeed ZeRO-3's hooks).
enum class CallPattern { per_unit, per_module };

// When an engine issues the next unit's weight gather in backward: before
// this unit's backward computes (pre: the gather may run under it), or
// after (post: the next unit's backward waits for it, with no compute to
// hide under). FSDP1's BackwardPrefetch.BACKWARD_PRE (PyTorch's default)
// and BACKWARD_POST (Composer's, so llm-foundry's).
enum class BackwardPrefetch { pre, post };
// "pre" or "post"; a ConfigError "WHERE: backward_prefetch must be ..." for anything else.
BackwardPrefetch parse_backward_prefetch(std::string_view s, const std::string& where);

// How the simulator's memory model counts an engine's memory per rank:
// each buffer the engine allocates, by the engine's own sizing rules
// (tierzero's: src/plan/engine_buffers.h), or bytes per parameter of each
// state with the gathered units and kept activations (any other engine).
enum class MemoryMethod { per_parameter, allocations };

// Bytes per parameter of each state of the plan, before the plan divides
// them among the ranks that share it.
struct StateBytes {
  double params = 2;  // the working (16-bit) parameters; FSDP keeps its fp32 shard as the parameter
  double grads = 4;   // the accumulated gradients
  double optim = 12;  // what the optimizer keeps: AdamW's moments, and an fp32 master where params is 16-bit
  bool operator==(const StateBytes&) const = default;
};

// Where an engine runs Megatron-style tensor parallelism (tierzero/mesh.h):
// nowhere, on CPU ranks only (tierzero's engine so far), or on any device.
enum class TensorParallel { none, cpu, any };

struct EngineProfile {
  std::string name;
  // Kernels.
  std::string attention = "flash2";  // a DeviceSpec rate, or "eager": two batched GEMMs and a softmax, the s x s scores kept
  double elementwise_traffic = 1;    // bytes the memory-bound ops move, over the op list's (fused kernels: 1)
  double host_overhead_s = 0;        // host time to issue one kernel: a kernel takes at least this (eager frameworks)
  bool fused_loss = false;           // cross-entropy in one pass over the 16-bit logits, else through fp32 copies
  int activation_bytes = 2;          // bytes per saved activation element
  // The recomputation policies the engine offers (Recompute::name of each
  // kind: none, full, every, selective, selective-op).
  std::vector<std::string> recompute = {"none", "full"};
  // The strategies (data/plans) the engine runs: FSDP has no ZeRO++ nor
  // hier3. simulate lists only these by default and marks any other it is
  // asked for; the corpus and the planner price any plan.
  std::vector<std::string> strategies = {"ddp", "zero1", "zero2", "zero3", "zeropp", "mics", "hier3"};
  int reduce_bytes = 2;              // bytes per gradient element a reduction moves (an fp32 reduce: 4)
  TensorParallel tensor_parallel = TensorParallel::none;
  // Whether each column-parallel projection's input-gradient collective runs
  // under its weight-gradient GEMM (Megatron-LM's asynchronous tensor-parallel
  // all-reduce); otherwise every tensor-parallel collective is exposed.
  bool tensor_overlap = false;
  // With sequence parallelism, whether every gather and reduce-scatter of a
  // block runs pipelined with the GEMM that consumes or produces it
  // (Transformer Engine's userbuffers, Megatron-Core's tp_comm_overlap): the
  // simulator hides each for as long as that GEMM runs.
  bool tp_comm_overlap = false;
  // The pipeline schedules it runs (tierzero/simulator.h, PipelineShape):
  // "1f1b", "interleaved"; none: no pipeline parallelism.
  std::vector<std::string> pipeline;
  // Whether the interleaved schedule's sends between stages run beside the
  // next chunk's compute (Megatron-LM's overlap_p2p_comm); otherwise each is
  // exposed.
  bool pipeline_p2p_overlap = false;
  // The context parallelism it runs (tierzero/simulator.h, ContextShape):
  // "ring", "a2a"; none: no context parallelism.
  std::vector<std::string> context_parallel;
  // Collectives.
  CallPattern calls = CallPattern::per_unit;
  // Under a plan with replicated parameters (DDP, ZeRO-1/2, Megatron's
  // distributed optimizer) the gradients accumulate in a full-size local
  // buffer over a step's micro-batches and are reduced once, at its end
  // (DDP's no_sync); false: each micro-batch's are reduced (tierzero).
  bool accumulate_locally = false;
  // The gradients are held in the buffer they are reduced from, so in the
  // reduction's dtype (reduce_bytes), not in state_bytes.grads: Megatron-Core's
  // grad buffer is fp32 with grad_reduce_in_fp32, else the parameters' dtype.
  bool grads_in_reduce_dtype = false;
  Overlap overlap;                       // fraction of each kind of overlappable communication hidden under compute
  BackwardPrefetch backward_prefetch = BackwardPrefetch::pre;  // post: the backward gathers hide under nothing
  double overlap_slowdown = 0;           // fraction by which compute beside collectives slows (their kernels take SMs and bandwidth)
  // Memory.
  MemoryMethod memory = MemoryMethod::per_parameter;
  StateBytes state_bytes;
  int live_units = 2;          // gathered units held at once (the one computing, the one prefetched)
  bool root_gathered = false;  // the embedding and head stay gathered from forward to the end of backward (FSDP's root unit)
  double allocator_reserve = 0;  // fraction on top of the allocated peak that the caching allocator holds
  double fixed_bytes = 0;        // per rank: runtime context, communication buffers, library workspaces
  std::vector<std::pair<std::string, std::string>> sources;  // per key, where its value comes from
  bool operator==(const EngineProfile&) const = default;

  std::string source_of(const std::string& key) const;
  bool runs(std::string_view strategy) const;  // `strategy` is one of `strategies`
  // Whether it runs tensor parallelism on a device with `sm_count` (0: a CPU rank).
  bool runs_tensor_parallel(int sm_count) const;
};

// tierzero, fsdp, fsdp2, deepspeed, megatron.
std::vector<std::string> engine_names();
// The preset of `name`; throws ConfigError naming the engines.
EngineProfile engine_profile(std::string_view name);

}  // namespace tierzero
