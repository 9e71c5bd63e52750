// Plan search (docs/simulator.md): enumerates plans — the level of each
// state, weight and per-hop gradient bits, the collectives' decomposition,
// prefetch depth, bucket size, activation recomputation and, where the
// engine runs it on the device, the tensor-parallel degree (2, 4 or 8 on a
// level inside the node), the pipeline stages and the context-parallel
// degree (for long sequences) — prices each
// with the simulator and returns those that fit, best first: by predicted
// throughput, except that a lossy plan (quantised weights or gradients)
// ranks above an exact one only when it is faster by more than
// min_quant_gain. Plans that differ only in prefetch depth or bucket size
// are listed once (the fastest, then the smallest), and so are plans whose
// predicted throughput is within `alike_within` of a faster listed one of
// the same kind (exact or lossy): it is listed with what the others change.
// Each plan that fits with a hierarchical decomposition then gets the hop
// chunk size (plan key hop_chunk_bytes) the simulator prices cheapest.
#pragma once
#include <array>
#include <optional>
#include <vector>

#include "tierzero/simulator.h"

namespace tierzero {

// The plans folded into a listed one: how many, each setting they change
// with the values they give it ("bwd_params" -> {"node", "world"}), and
// their memory range in bytes.
struct PlanAlike {
  int count = 0;
  std::vector<std::pair<std::string, std::vector<std::string>>> changes{};
  double memory_min = 0, memory_max = 0;
};

struct PlanCandidate {
  Plan plan;
  Recompute recompute;
  SimResult result;
  PlanAlike alike;  // the plans folded into this one by search_plans
  MeshShape mesh;   // the tensor-parallel degree and level it runs with (the plan's levels are the data ranks')
  PipelineShape pipeline;  // its pipeline stages and schedule (stages 1: none)
  ContextShape context;    // its context-parallel degree, kind and level (degree 1: none)
};

// The settings of b that differ from a's, as (setting, b's value): params,
// bwd_params, grads, optim, weight_bits, grad_bits, gather, reduce,
// prefetch, bucket_mib, hop_chunk_bytes, recompute, offload, param_offload, tp, pp, cp.
std::vector<std::pair<std::string, std::string>> plan_differences(const PlanCandidate& a, const PlanCandidate& b);

// in.plan with bwd_params widened one level at a time (up to params' level)
// until the step fits the device memory: hier3's package copy becomes
// node-level when the package copy does not fit. Unchanged when it fits or
// nothing wider is allowed.
Plan fit_memory(const SimInput& in);

// The hop chunk sizes the search tries (bytes of each rank's part per
// chunk; 0: whole, the hops one after the other).
inline constexpr std::array<std::size_t, 4> kHopChunkCandidates = {0, std::size_t{1} << 18, std::size_t{1} << 20, std::size_t{1} << 22};
// in.plan's hop_chunk_bytes set to the candidate whose step the simulator
// prices fastest among those that fit `memory_limit` (bytes), and that
// step's result; ties and plans with flat collectives keep whole (0).
std::pair<Plan, SimResult> choose_hop_chunk(const SimInput& in, double memory_limit);
// True when the two differ at most in their collectives' decomposition and
// price the same (the planner lists such candidates once).
bool same_but_decomposition(const PlanCandidate& a, const PlanCandidate& b);
// True when the two differ at most in prefetch depth and bucket size.
bool same_but_buffers(const PlanCandidate& a, const PlanCandidate& b);
// Quantised weights or gradients.
bool lossy(const Plan& p);

// One key of the engine files (data/engines) in which another engine
// differs from a job's, and what it is worth on that job: its throughput
// with the other engine's value over that with its own (above 1: the other
// engine's value is faster).
struct EngineDifference {
  std::string key;           // as the engine files name it: attention, activation_bytes, overlap, ...
  std::string ours, theirs;  // the two values
  double speedup = 1;
};
// The keys in which `other` differs from in.engine, each priced alone on
// `in` (the rest in.engine's), that move its throughput by more than
// `at_least` (a fraction), the largest effect first: why one engine is
// slower than another on this job.
std::vector<EngineDifference> engine_differences(const SimInput& in, const EngineProfile& other, double at_least = 0.01);

inline constexpr int kLongSequence = 16384;
inline constexpr int kMaxContextDegree = 32;

struct PlanSearchOptions {
  std::optional<double> memory_limit;  // bytes; default the system's device memory
  std::size_t top = 10;
  double min_quant_gain = 0.05;  // a lossy plan must beat the best exact one by this fraction
  double alike_within = 0.005;   // plans this close in throughput to a listed one are folded into it (0: none)
};

// `base` supplies model, system, ranks and batch, and the tensor-parallel
// mesh, the pipeline and the context parallelism where their degree is above
// 1 (else each the engine runs is tried; context parallelism only for
// sequences of kLongSequence tokens or more, degrees up to kMaxContextDegree).
// Returns at most `top` candidates.
std::vector<PlanCandidate> search_plans(const SimInput& base, const PlanSearchOptions& options);

}  // namespace tierzero
