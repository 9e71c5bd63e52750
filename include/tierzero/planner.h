// Plan search (docs/simulator.md): enumerates plans — the level of each
// state, weight and per-hop gradient bits, the collectives' decomposition,
// prefetch depth, bucket size and activation recomputation — prices each
// with the simulator and returns those that fit, fastest first.
#pragma once
#include <optional>
#include <vector>

#include "tierzero/sim.h"

namespace tierzero {

struct PlanCandidate {
  Plan plan;
  bool recompute = false;
  SimResult result;
};

// in.plan with bwd_params widened one level at a time (up to params' level)
// until the step fits the device memory: hier3's package copy becomes
// node-level when the package copy does not fit. Unchanged when it fits or
// nothing wider is allowed.
Plan fit_memory(const SimInput& in);

// True when the two differ at most in their collectives' decomposition and
// price the same (the planner lists such candidates once).
bool same_but_decomposition(const PlanCandidate& a, const PlanCandidate& b);

// `base` supplies model, system, ranks and batch; memory_limit (bytes)
// overrides the system's device memory. Returns at most `top` candidates.
std::vector<PlanCandidate> search_plans(const SimInput& base, std::optional<double> memory_limit, std::size_t top);

}  // namespace tierzero
