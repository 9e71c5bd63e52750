#include "breakdown_report.h"

#include <cstdio>
#include <string>
#include <nlohmann/json.hpp>

#include "tierzero/topology.h"

namespace tierzero::cli {

namespace {
constexpr const char* kKinds[StepBreakdown::kKinds] = {"gather", "reduce", "control"};
// StepBreakdown's phases: local work, quantisation, then one per level.
std::string phase_name(int p) {
  if (p < 2) return p == 0 ? "local" : "quant";
  return std::string(level_name(static_cast<Level>(p - 2)));
}

nlohmann::ordered_json table(const StepBreakdown::Table& t) {
  nlohmann::ordered_json j;
  for (int k = 0; k < StepBreakdown::kKinds; ++k)
    for (int p = 0; p < StepBreakdown::kPhases; ++p) j[kKinds[k]][phase_name(p)] = t[k][p];
  return j;
}

// "world 0.250 node 0.040 ..." for the phases of one kind above 0.5 ms.
std::string phases(const StepBreakdown::Table& t, int kind) {
  std::string s;
  for (int p = StepBreakdown::kPhases; p-- > 0;) {
    if (t[kind][p] < 5e-4) continue;
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%s %.3f", s.empty() ? "" : " ", phase_name(p).c_str(), t[kind][p]);
    s += buf;
  }
  return s.empty() ? "-" : s;
}
}  // namespace

nlohmann::ordered_json breakdown_json(const std::vector<StepBreakdown>& ranks, double checkpoint_s) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const StepBreakdown& b : ranks)
    all.push_back({{"step_s", b.step_s},
                   {"forward_s", b.forward_s},
                   {"backward_s", b.backward_s},
                   {"optimizer_s", b.optimizer_s},
                   {"gather_wait_s", b.gather_wait_s},
                   {"reduce_wait_s", b.reduce_wait_s},
                   {"control_wait_s", b.control_wait_s},
                   {"tensor_wait_s", b.tensor_wait_s},
                   {"slot_wait_s", b.slot_wait_s},
                   {"gather_behind_reduce_s", b.gather_behind_reduce_s},
                   {"checkpoint_s", checkpoint_s},
                   {"exposed", table(b.exposed)},
                   {"busy", table(b.busy)}});
  return all;
}

void print_breakdown(std::int64_t step, const std::vector<StepBreakdown>& ranks, double checkpoint_s) {
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const StepBreakdown& b = ranks[r];
    std::fprintf(stderr,
                 "breakdown step %lld rank %zu: %.3f s | compute fwd %.3f bwd %.3f opt %.3f | waits gather %.3f reduce %.3f control "
                 "%.3f slot %.3f tensor %.3f | exposed gather [%s] reduce [%s] control [%s] | gathers behind reductions %.3f | checkpoint %.3f\n",
                 static_cast<long long>(step), r, b.step_s, b.forward_s, b.backward_s, b.optimizer_s, b.gather_wait_s, b.reduce_wait_s,
                 b.control_wait_s, b.slot_wait_s, b.tensor_wait_s, phases(b.exposed, 0).c_str(), phases(b.exposed, 1).c_str(),
                 phases(b.exposed, 2).c_str(), b.gather_behind_reduce_s, checkpoint_s);
  }
}

}  // namespace tierzero::cli
