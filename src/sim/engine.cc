#include "tierzero/engine.h"

#include <algorithm>

#include "core/embedded_data.h"
#include "core/sourced_table.h"
#include "core/toml_read.h"
#include "sim/engine_toml.h"
#include "tierzero/error.h"
#include "tierzero/plan.h"

namespace tierzero {

std::string EngineProfile::source_of(const std::string& key) const { return tierzero::source_of(sources, key); }

BackwardPrefetch parse_backward_prefetch(std::string_view s, const std::string& where) {
  TZ_CHECK(s == "pre" || s == "post", ConfigError, where + ": backward_prefetch must be \"pre\" or \"post\", got '" + std::string(s) + "'");
  return s == "post" ? BackwardPrefetch::post : BackwardPrefetch::pre;
}

std::vector<std::string> engine_names() { return embedded_names("engines"); }

namespace {
// When `key` is present: field = its list of names, each one of `allowed`; ConfigError naming them otherwise.
void read_names(SourcedTable& t, const std::string& key, const std::vector<std::string>& allowed, std::vector<std::string>& field) {
  if (!t.take(key)) return;
  std::string names;
  for (const std::string& n : allowed) names += (names.empty() ? "" : ", ") + n;
  const toml::array* list = t.table()[key].as_array();
  TZ_CHECK(list && !list->empty(), ConfigError, t.where() + ": " + key + " must be a list of " + names);
  field.clear();
  for (const toml::node& k : *list) {
    const auto name = k.value<std::string>();
    TZ_CHECK(name && std::find(allowed.begin(), allowed.end(), *name) != allowed.end(), ConfigError,
             t.where() + ": " + key + " lists " + names + ", not " + (name ? "'" + *name + "'" : "a non-string"));
    field.push_back(*name);
  }
}
}  // namespace

bool EngineProfile::runs(std::string_view strategy) const {
  return std::find(strategies.begin(), strategies.end(), strategy) != strategies.end();
}

bool EngineProfile::runs_tensor_parallel(int sm_count) const {
  return tensor_parallel == TensorParallel::any || (tensor_parallel == TensorParallel::cpu && sm_count == 0);
}

void read_engine_keys(const toml::table& table, EngineProfile& e, const std::string& where) {
  SourcedTable t(table, where);
  t.text("attention", e.attention);
  t.number("elementwise_traffic", e.elementwise_traffic, 0.1, 100);
  t.number("host_overhead_us", e.host_overhead_s, 0, 1e6, 1e-6);
  t.boolean("fused_loss", e.fused_loss);
  t.integer("activation_bytes", e.activation_bytes, 1, 8);
  read_names(t, "recompute", {"none", "full", "every", "selective", "selective-op"}, e.recompute);
  read_names(t, "strategies", strategy_names(), e.strategies);
  t.integer("reduce_bytes", e.reduce_bytes, 0, 8);
  const char* tp_names[] = {"none", "cpu", "any"};
  std::string tp = tp_names[static_cast<int>(e.tensor_parallel)];
  t.text("tensor_parallel", tp, {"none", "cpu", "any"});
  e.tensor_parallel = tp == "any" ? TensorParallel::any : tp == "cpu" ? TensorParallel::cpu : TensorParallel::none;
  t.boolean("tensor_overlap", e.tensor_overlap);
  t.boolean("tp_comm_overlap", e.tp_comm_overlap);
  read_names(t, "pipeline", {"1f1b", "interleaved"}, e.pipeline);
  t.boolean("pipeline_p2p_overlap", e.pipeline_p2p_overlap);
  read_names(t, "context_parallel", {"ring", "a2a"}, e.context_parallel);
  std::string calls = e.calls == CallPattern::per_module ? "per_module" : "per_unit";
  t.text("calls", calls, {"per_unit", "per_module"});
  e.calls = calls == "per_module" ? CallPattern::per_module : CallPattern::per_unit;
  t.boolean("accumulate_locally", e.accumulate_locally);
  t.boolean("grads_in_reduce_dtype", e.grads_in_reduce_dtype);
  std::string prefetch = e.backward_prefetch == BackwardPrefetch::post ? "post" : "pre";
  t.text("backward_prefetch", prefetch);
  e.backward_prefetch = parse_backward_prefetch(prefetch, where);
  t.number("overlap_forward", e.overlap.forward, 0, 1);
  t.number("overlap_backward", e.overlap.backward, 0, 1);
  t.number("overlap_reduce", e.overlap.reduce, 0, 1);
  t.source_only("overlap");
  t.number("overlap_slowdown", e.overlap_slowdown, 0, 0.99);
  std::string memory = e.memory == MemoryMethod::allocations ? "allocations" : "per_parameter";
  t.text("memory", memory, {"per_parameter", "allocations"});
  e.memory = memory == "allocations" ? MemoryMethod::allocations : MemoryMethod::per_parameter;
  t.number("params_bytes", e.state_bytes.params, 0, 16);
  t.number("grads_bytes", e.state_bytes.grads, 0, 16);
  t.number("optim_bytes", e.state_bytes.optim, 0, 64);
  t.source_only("state_bytes");
  t.integer("live_units", e.live_units, 1, 64);
  t.boolean("root_gathered", e.root_gathered);
  t.number("allocator_reserve", e.allocator_reserve, 0, 1);
  t.number("fixed_gb", e.fixed_bytes, 0, 1e6, 1e9);
  t.source_only("based_on");
  t.finish(e.sources);
}

namespace {
// data/engines/NAME.toml: every key optional over the based_on engine's (or
// EngineProfile's defaults), each with an optional KEY_source.
EngineProfile parse_engine(std::string_view name, std::string_view text) {
  const std::string origin = "data/engines/" + std::string(name) + ".toml";
  const toml::table root = parse_toml(text, origin);
  EngineProfile e;
  if (const auto base = root["based_on"].value<std::string>()) {
    TZ_CHECK(*base != name, ConfigError, origin + ": based_on names itself");
    e = engine_profile(*base);
  }
  e.name = std::string(name);
  read_engine_keys(root, e, origin);
  return e;
}
}  // namespace

EngineProfile engine_profile(std::string_view name) {
  if (const auto text = embedded_text("engines", name)) return parse_engine(name, *text);
  std::string names;
  for (const std::string& n : engine_names()) names += (names.empty() ? "" : ", ") + n;
  TZ_THROW(ConfigError, "unknown engine '" + std::string(name) + "' (engines: " + names + ")");
}

}  // namespace tierzero
