#include "tierzero/planner.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "sim/context_parallel.h"
#include "tierzero/error.h"

namespace tierzero {

Plan fit_memory(const SimInput& in) {
  SimInput t = in;
  while (!simulate(t).fits) {
    if (!t.plan.bwd_params || !t.plan.params || *t.plan.bwd_params == *t.plan.params) return in.plan;
    t.plan.bwd_params = static_cast<Level>(static_cast<int>(*t.plan.bwd_params) + 1);
    t.plan = fit_to(t.plan, t.data_topology());  // on to the next declared level (never past params)
  }
  return t.plan;
}

std::pair<Plan, SimResult> choose_hop_chunk(const SimInput& in, double memory_limit) {
  SimInput t = in;
  t.plan.hop_chunk_bytes = 0;
  SimResult best = simulate(t);
  best.judge_memory(memory_limit, t.engine);
  Plan chosen = t.plan;
  if (in.plan.gather == Decomposition::flat && in.plan.reduce == Decomposition::flat) return {chosen, best};
  for (const std::size_t chunk : kHopChunkCandidates) {
    if (chunk == 0) continue;
    t.plan.hop_chunk_bytes = chunk;
    SimResult r = simulate(t);
    r.judge_memory(memory_limit, t.engine);
    if (r.fits && (!best.fits || r.step_time_s < best.step_time_s)) best = r, chosen = t.plan;
  }
  return {chosen, best};
}

// Candidates that differ at most in how collectives are decomposed and price the same.
bool same_but_decomposition(const PlanCandidate& a, const PlanCandidate& b) {
  Plan x = a.plan, y = b.plan;
  x.gather = x.reduce = y.gather = y.reduce = Decomposition::flat;
  return a.mesh == b.mesh && a.pipeline == b.pipeline && a.context == b.context && a.recompute == b.recompute && x.describe() == y.describe() &&
         x.prefetch == y.prefetch &&
         x.bucket_bytes == y.bucket_bytes &&
         a.result.step_time_s == b.result.step_time_s && a.result.memory_total == b.result.memory_total;
}

bool same_but_buffers(const PlanCandidate& a, const PlanCandidate& b) {
  return a.mesh == b.mesh && a.pipeline == b.pipeline && a.context == b.context && a.recompute == b.recompute &&
         a.plan.describe() == b.plan.describe();
}

bool lossy(const Plan& p) { return p.weight_bits != 16 || p.quantized(); }

std::vector<std::pair<std::string, std::string>> plan_differences(const PlanCandidate& a, const PlanCandidate& b) {
  const auto settings = [](const PlanCandidate& c) {
    const Plan& p = c.plan;
    return std::vector<std::pair<std::string, std::string>>{
        {"params", partition_name(p.params)},
        {"bwd_params", partition_name(p.bwd_params)},
        {"grads", partition_name(p.grads)},
        {"optim", partition_name(p.optim)},
        {"weight_bits", std::to_string(p.weight_bits)},
        {"grad_bits", p.grad_bits.to_string()},
        {"gather", std::string(decomposition_name(p.gather))},
        {"reduce", std::string(decomposition_name(p.reduce))},
        {"prefetch", std::to_string(p.prefetch)},
        {"bucket_mib", p.bucket_bytes == ~std::size_t{0} ? "whole" : std::to_string(p.bucket_bytes >> 20)},
        {"hop_chunk_bytes", p.hop_chunk_bytes ? std::to_string(p.hop_chunk_bytes) : "whole"},
        {"recompute", c.recompute.name()},
        {"offload", std::string(offload_name(p.optim_offload.device))},
        {"param_offload", std::string(offload_name(p.param_offload.device))},
        {"tp", std::to_string(c.mesh.tp) + (c.mesh.tp_level ? " on " + std::string(level_name(*c.mesh.tp_level)) : "")},
        {"pp", std::to_string(c.pipeline.stages) + (c.pipeline.stages > 1 ? " " + c.pipeline.schedule() : "")},
        {"cp", std::to_string(c.context.degree) + (c.context.degree > 1 ? " " + c.context.kind_name() : "")}};
  };
  const auto x = settings(a), y = settings(b);
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i].second != y[i].second) out.push_back(y[i]);
  return out;
}

namespace {
// Folds c into the listed candidate l: counts it, records the settings it changes and its memory.
void fold(PlanCandidate& l, const PlanCandidate& c) {
  PlanAlike& a = l.alike;
  if (a.count == 0) a.memory_min = a.memory_max = c.result.memory_total;
  ++a.count;
  a.memory_min = std::min(a.memory_min, c.result.memory_total);
  a.memory_max = std::max(a.memory_max, c.result.memory_total);
  for (const auto& change : plan_differences(l, c)) {
    auto it = std::find_if(a.changes.begin(), a.changes.end(), [&](const auto& e) { return e.first == change.first; });
    if (it == a.changes.end()) it = a.changes.insert(a.changes.end(), {change.first, {}});
    if (std::find(it->second.begin(), it->second.end(), change.second) == it->second.end()) it->second.push_back(change.second);
  }
}
}  // namespace

// The tensor-parallel meshes the search tries: tp 1 and, where the engine runs tensor parallelism on the device,
// 2, 4 and 8 on each level inside a node (package, node) whose fan-out the degree divides, as the model's heads,
// MLP size and vocabulary allow.
std::vector<MeshShape> tensor_meshes(const SimInput& base) {
  std::vector<MeshShape> out = {MeshShape{}};
  if (!base.engine.runs_tensor_parallel(base.system.device.sm_count)) return out;
  const Topology world = base.topology();
  for (const Level l : {Level::package, Level::node})
    for (const int tp : {2, 4, 8}) {
      if (world.fanout(l) % tp != 0) continue;
      try {
        check_tp(base.model, tp);
      } catch (const ConfigError&) {
        continue;
      }
      out.push_back(MeshShape{tp, l});
    }
  return out;
}

// The pipelines the search tries: the user's (--pp), else none and, where the engine runs the 1F1B schedule, 2, 4
// and 8 stages along the outermost level whose fan-out the stages divide, as the model's layers allow.
std::vector<PipelineShape> pipelines(const SimInput& base) {
  if (base.pipeline.stages > 1) return {base.pipeline};
  std::vector<PipelineShape> out = {PipelineShape{}};
  const auto& offered = base.engine.pipeline;
  if (std::find(offered.begin(), offered.end(), "1f1b") == offered.end()) return out;
  const Topology world = base.topology();
  const Level outer = world.levels().back();
  for (const int stages : {2, 4, 8})
    if (world.fanout(outer) % stages == 0 && base.model.layers % stages == 0) out.push_back(PipelineShape{stages, 1, outer});
  return out;
}

// The context parallelism the search tries for `job` (its mesh and pipeline set) over its data ranks `ranks`: the
// user's (--cp, its level made explicit), else none and, for sequences of kLongSequence tokens or more, 2, 4, 8, ...
// up to kMaxContextDegree of each kind the engine runs, on each level whose ranks the degree divides; only those the
// job can run (check_context: the sequence, the heads, the attention, the ranks beside this mesh and pipeline).
std::vector<ContextShape> contexts(const SimInput& job, const Topology& ranks, int seq_len) {
  SimInput t = job;
  const auto runs = [&](const ContextShape& c) {
    t.context = c;
    try {
      check_context(t, seq_len);
    } catch (const ConfigError&) {
      return false;
    }
    return true;
  };
  if (job.context.degree > 1) {
    ContextShape c = job.context;
    c.level = c.level_in(ranks);
    return runs(c) ? std::vector<ContextShape>{c} : std::vector<ContextShape>{};
  }
  std::vector<ContextShape> out = {ContextShape{}};
  if (seq_len < kLongSequence) return out;
  for (const std::string& kind : job.engine.context_parallel)
    for (const Level l : ranks.levels())
      for (int cp = 2; cp <= kMaxContextDegree && cp <= ranks.fanout(l); cp *= 2)
        if (const ContextShape c{cp, ContextShape::parse_kind(kind), l}; runs(c)) out.push_back(c);
  return out;
}

std::vector<PlanCandidate> search_plans(const SimInput& base, const PlanSearchOptions& options) {
  const double limit = options.memory_limit.value_or(base.system.memory_bytes);
  const std::vector<const char*> grad_bits = {"package=16,node=16,world=16", "package=16,node=8,world=8", "package=16,node=8,world=4",
                                              "package=8,node=8,world=8", "package=4,node=4,world=4"};
  std::vector<PlanCandidate> out;
  // Recomputation, of what the engine offers: none or every block's; the attention core alone where it keeps its s x s scores.
  std::vector<Recompute> policies;
  const auto offers = [&](const char* kind) {
    return std::find(base.engine.recompute.begin(), base.engine.recompute.end(), kind) != base.engine.recompute.end();
  };
  for (const char* kind : {"none", "full"})
    if (offers(kind)) policies.push_back(Recompute::parse(kind));
  if (offers("selective") && (base.attention.empty() ? base.engine.attention : base.attention) == "eager")
    policies.push_back(Recompute{Recompute::Kind::selective});
  const std::vector<MeshShape> meshes = base.mesh.tp > 1 ? std::vector<MeshShape>{base.mesh} : tensor_meshes(base);  // the user's, or each
  const std::vector<PipelineShape> pipes = pipelines(base);
  // Every plan over the data ranks of `mesh` and `pipe`, its states' levels theirs, with each context parallelism the
  // search tries there.
  const auto enumerate_mesh = [&](const MeshShape& mesh, const PipelineShape& pipe, Offload offload, Offload param_offload) {
    SimInput job = base;
    job.mesh = mesh;
    job.pipeline = pipe;
    const std::optional<Topology> data_ranks = [&]() -> std::optional<Topology> {
      try {
        return job.data_topology();
      } catch (const ConfigError&) {
        return std::nullopt;  // the tensor group and the stages do not both fit their levels
      }
    }();
    if (!data_ranks) return;
    const Topology& topo = *data_ranks;
    TrainConfig sequence;  // the sequence the job runs (seq_len 0: the model's context)
    sequence.model = base.model, sequence.seq_len = base.seq_len;
    const std::vector<ContextShape> shapes = contexts(job, topo, sequence.effective_seq_len());
    if (shapes.empty()) return;  // the user's context parallelism does not fit beside this mesh and pipeline
    const auto consider = [&](Plan plan, const Recompute& recompute) {
      plan.optim_offload.device = offload, plan.param_offload.device = param_offload;
      plan.persist_threshold = base.plan.persist_threshold;  // the user's (--persist-threshold)
      plan.optim_offload.nvme_path = plan.param_offload.nvme_path = "<nvme_path>";  // the run names the directory
      try {
        plan.validate(topo);
      } catch (const ConfigError&) {
        return;
      }
      SimInput in = job;
      in.plan = plan;
      in.recompute = recompute;
      SimResult r = simulate(in);
      r.judge_memory(limit, in.engine);
      // A decomposition that changes nothing on this topology (three-level on two levels) is listed once.
      const PlanCandidate candidate{plan, recompute, r, {}, mesh, pipe, job.context};
      const auto same = [&](const PlanCandidate& c) { return same_but_decomposition(c, candidate); };
      if (r.fits && std::none_of(out.begin(), out.end(), same)) out.push_back(candidate);
    };
    // With context parallelism or a pipeline, the engine's own strategies (data/engines: strategies), which keeps the
    // search as fast as the one without them.
    const auto engine_strategies = [&] {
      for (const std::string& strategy : base.engine.strategies)
        for (const Recompute& recompute : policies) consider(fit_to(strategy_plan(strategy), topo), recompute);
    };
    for (const ContextShape& shape : shapes)
      if (shape.degree > 1) job.context = shape, engine_strategies();
    if (shapes.front().degree > 1) return;  // the user's context parallelism alone
    job.context = ContextShape{};
    if (pipe.stages > 1) return engine_strategies();
    std::vector<Partition> levels = {std::nullopt};
    for (Level l : topo.levels()) levels.push_back(l);
    for (const Partition& optim : levels)
      for (int replicated_params = 0; replicated_params < 2; ++replicated_params) {
        const Partition p = replicated_params ? Partition{} : optim;
        if (replicated_params && !optim) continue;  // both replicated: counted once
        for (const Partition& bwd : levels) {
          if ((bwd ? static_cast<int>(*bwd) : -1) > (p ? static_cast<int>(*p) : -1)) continue;
          for (int wbits : {16, 8})
            for (const char* gb : grad_bits)
              for (Decomposition d : {Decomposition::flat, Decomposition::two_level, Decomposition::three_level})
                for (int prefetch : {1, 2})
                  for (std::size_t bucket : {std::size_t{1} << 22, std::size_t{1} << 26})
                    for (const Recompute& recompute : policies) {
                      Plan plan;
                      plan.name = "search";
                      plan.params = p, plan.bwd_params = bwd, plan.grads = plan.optim = optim;
                      plan.weight_bits = wbits;
                      plan.grad_bits = parse_hop_bits(gb);
                      plan.gather = plan.reduce = d;
                      plan.prefetch = prefetch;
                      plan.bucket_bytes = bucket;
                      plan.quant_block = 64;
                      consider(plan, recompute);
                    }
        }
      }
  };
  const auto enumerate = [&](Offload offload, Offload param_offload) {
    for (const MeshShape& mesh : meshes)
      for (const PipelineShape& pipe : pipes) enumerate_mesh(mesh, pipe, offload, param_offload);
  };
  enumerate(Offload::none, Offload::none);
  // Nothing fits the device: the optimizer state to host memory, or to NVMe where the system gives its rate; if
  // that does not fit either, the parameter shards too (partitioned plans only: validate skips the others).
  const bool nvme = base.system.nvme_Bps > 0;
  if (out.empty() && base.system.host_memory_Bps > 0) {
    enumerate(Offload::cpu, Offload::none);
    if (nvme) enumerate(Offload::nvme, Offload::none);
    if (out.empty()) {
      enumerate(Offload::cpu, Offload::cpu);
      if (nvme) enumerate(Offload::nvme, Offload::nvme);
    }
  }
  // Each plan that fits, with its cheapest hop chunk (priced after the search: the chunk moves only the exposed
  // communication, so a plan that does not fit whole is not tried).
  for (PlanCandidate& c : out) {
    if (c.plan.gather == Decomposition::flat && c.plan.reduce == Decomposition::flat) continue;
    SimInput in = base;
    in.mesh = c.mesh, in.pipeline = c.pipeline, in.context = c.context, in.plan = c.plan, in.recompute = c.recompute;
    std::tie(c.plan, c.result) = choose_hop_chunk(in, limit);
  }
  // Lossy plans are ranked as if slower by the margin they must win by; plans at the memory limit (their throughput
  // an upper bound: SimResult::at_memory_limit) after every other.
  const auto score = [&](const PlanCandidate& c) {
    return c.result.tflops_per_device / (lossy(c.plan) ? 1 + options.min_quant_gain : 1.0);
  };
  std::sort(out.begin(), out.end(), [&](const PlanCandidate& a, const PlanCandidate& b) {
    if (a.result.at_memory_limit != b.result.at_memory_limit) return b.result.at_memory_limit;
    if (score(a) != score(b)) return score(a) > score(b);
    return a.result.memory_total < b.result.memory_total;
  });
  std::vector<PlanCandidate> listed;
  for (const PlanCandidate& c : out) {
    if (std::any_of(listed.begin(), listed.end(), [&](const PlanCandidate& l) { return same_but_buffers(l, c); })) continue;
    const auto alike = std::find_if(listed.begin(), listed.end(), [&](const PlanCandidate& l) {
      return options.alike_within > 0 && lossy(l.plan) == lossy(c.plan) &&
             c.result.tflops_per_device >= l.result.tflops_per_device * (1 - options.alike_within);
    });
    if (alike != listed.end()) fold(*alike, c);
    else if (listed.size() < options.top) listed.push_back(c);
  }
  return listed;
}

}  // namespace tierzero
