// engine_differences: each key of the engine files in which two engines
// differ, priced alone.
#include <algorithm>
#include <cmath>
#include <functional>
#include <fmt/format.h>

#include "tierzero/planner.h"

namespace tierzero {

namespace {
std::string show(const std::string& v) { return v; }
std::string show(double v) { return fmt::format("{:g}", v); }
std::string show(int v) { return std::to_string(v); }
std::string show(bool v) { return v ? "true" : "false"; }
std::string show(CallPattern v) { return v == CallPattern::per_module ? "per_module" : "per_unit"; }
std::string show(BackwardPrefetch v) { return v == BackwardPrefetch::post ? "post" : "pre"; }
std::string show(const Overlap& v) { return fmt::format("{:g}/{:g}/{:g}", v.forward, v.backward, v.reduce); }
std::string show(const StateBytes& v) { return fmt::format("{:g}/{:g}/{:g}", v.params, v.grads, v.optim); }

// A key of the engine files: how to read its value and how to take another engine's.
struct Key {
  std::string name;
  std::function<std::string(const EngineProfile&)> value;
  std::function<void(EngineProfile&, const EngineProfile&)> take;
};

template <class T>
Key key(std::string name, T EngineProfile::*field) {
  return {std::move(name), [field](const EngineProfile& e) { return show(e.*field); },
          [field](EngineProfile& e, const EngineProfile& o) { e.*field = o.*field; }};
}

Key host_overhead_us() {
  return {"host_overhead_us", [](const EngineProfile& e) { return show(e.host_overhead_s * 1e6); },
          [](EngineProfile& e, const EngineProfile& o) { e.host_overhead_s = o.host_overhead_s; }};
}

// Every key that prices time (the memory-only ones change no throughput). overlap is
// overlap_forward/backward/reduce, state_bytes params/grads/optim_bytes, as the files group their sources.
std::vector<Key> keys() {
  return {key("attention", &EngineProfile::attention),         key("elementwise_traffic", &EngineProfile::elementwise_traffic),
          host_overhead_us(), key("fused_loss", &EngineProfile::fused_loss),
          key("activation_bytes", &EngineProfile::activation_bytes), key("reduce_bytes", &EngineProfile::reduce_bytes),
          key("calls", &EngineProfile::calls),                     key("accumulate_locally", &EngineProfile::accumulate_locally),
          key("overlap", &EngineProfile::overlap),                 key("backward_prefetch", &EngineProfile::backward_prefetch),
          key("overlap_slowdown", &EngineProfile::overlap_slowdown), key("state_bytes", &EngineProfile::state_bytes),
          key("live_units", &EngineProfile::live_units),           key("tensor_overlap", &EngineProfile::tensor_overlap),
          key("tp_comm_overlap", &EngineProfile::tp_comm_overlap), key("pipeline_p2p_overlap", &EngineProfile::pipeline_p2p_overlap)};
}
}  // namespace

std::vector<EngineDifference> engine_differences(const SimInput& in, const EngineProfile& other, double at_least) {
  const double own = simulate(in).tflops_per_device;
  std::vector<EngineDifference> out;
  for (const Key& k : keys()) {
    if (k.value(in.engine) == k.value(other)) continue;
    SimInput t = in;
    k.take(t.engine, other);
    const double speedup = simulate(t).tflops_per_device / own;
    if (std::fabs(std::log(speedup)) > std::log1p(at_least)) out.push_back({k.name, k.value(in.engine), k.value(other), speedup});
  }
  std::sort(out.begin(), out.end(),
            [](const EngineDifference& a, const EngineDifference& b) { return std::fabs(std::log(a.speedup)) > std::fabs(std::log(b.speedup)); });
  return out;
}

}  // namespace tierzero
