#include "tierzero/simulator.h"

#include <algorithm>
#include <cmath>

#include "plan/shard_layout.h"
#include "sim/compute_model.h"
#include "sim/context_parallel.h"
#include "sim/hop_time.h"
#include "sim/memory_model.h"
#include "sim/op_list.h"
#include "sim/pipeline.h"
#include "sim/tensor_traffic.h"
#include "sim/traffic_model.h"
#include "tierzero/error.h"

namespace tierzero {

Recompute Recompute::parse(std::string_view s) {
  Recompute r;
  if (s == "none" || s == "false") return r;
  if (s == "full" || s == "true") r.kind = Kind::full;
  else if (s == "selective") r.kind = Kind::selective;
  else if (s == "selective-op") r.kind = Kind::ops;
  else if (s.starts_with("every:")) {
    int n = 0;
    for (char c : s.substr(6)) {
      if (c < '0' || c > '9' || n > 100000) n = -1;
      if (n < 0) break;
      n = n * 10 + (c - '0');
    }
    TZ_CHECK(n >= 1 && s.size() > 6, ConfigError, "recompute '" + std::string(s) + "': every:N needs a whole N >= 1");
    r.kind = Kind::every, r.every = n;
  } else {
    TZ_THROW(ConfigError, "unknown recompute '" + std::string(s) + "' (none, full, selective, selective-op, every:N; true and false for full and none)");
  }
  return r;
}

std::string Recompute::kind_name() const { return kind == Kind::every ? "every" : name(); }

std::string Recompute::name() const {
  switch (kind) {
    case Kind::none: return "none";
    case Kind::full: return "full";
    case Kind::selective: return "selective";
    case Kind::ops: return "selective-op";
    case Kind::every: return "every:" + std::to_string(every);
  }
  return "none";
}

Topology SimInput::topology() const {
  if (topology_spec.empty()) return system.topology(ranks);
  Topology t = Topology::parse(topology_spec, ranks);
  for (Level l : t.levels()) system.link(l);  // throws ConfigError naming a level the system lacks
  return t;
}

Topology SimInput::data_topology() const { return mesh.data_topology(pipeline.data_topology(topology())); }

double collective_time(Collective k, const Topology& topo, const HopSpec& spec, std::uint64_t shard_bytes, const System& sys) {
  double t = 0;
  for (const HopTransfer& h : collective_hops(k, topo, spec, shard_bytes)) {
    const HopTime ht = hop_time(h, topo, sys);
    t += ht.transfer_s + ht.latency_s + sys.call_overhead_s;
  }
  return t;
}

namespace {
// Per unit, its parameterised modules (tensors sharing a name but for the
// _w/_b suffix: "h.0.attn_w" and "h.0.attn_b" are one module) as fractions
// of the unit's elements.
std::vector<std::vector<double>> module_fractions(const GptLayout& layout) {
  std::vector<std::vector<double>> out(layout.units().size());
  std::string last;
  for (const TensorInfo& t : layout.tensors()) {
    const bool suffixed = t.name.size() > 2 && (t.name.ends_with("_w") || t.name.ends_with("_b"));
    const std::string stem = suffixed ? t.name.substr(0, t.name.size() - 2) : t.name;
    const double f = static_cast<double>(t.numel) / static_cast<double>(layout.units()[t.unit].numel);
    if (stem == last && !out[t.unit].empty()) out[t.unit].back() += f;
    else out[t.unit].push_back(f);
    last = stem;
  }
  return out;
}

// The part of a hop that moves a fraction f of its unit's elements.
HopTransfer scaled(const HopTransfer& h, double f) {
  HopTransfer x = h;
  for (auto& b : x.bytes) b = static_cast<std::uint64_t>(std::llround(static_cast<double>(b) * f));
  x.quantized_bytes = static_cast<std::uint64_t>(std::llround(static_cast<double>(h.quantized_bytes) * f));
  return x;
}

// A pipelined collective (HopTransfer::chunks = n > 1, its hops consecutive)
// lasts its fill and drain, every hop's chunk call once, plus the slowest
// hop's other n - 1 chunk calls: sum_h c_h + (n - 1) max_h c_h, c_h a chunk
// call's transfer, latency and call overhead on hop h (docs/algorithms.md).
// Per transfer, the chunk calls it is priced for: n for each pipelined
// collective's slowest hop, 1 for its other hops (a whole collective's
// transfers are priced whole).
std::vector<double> pipeline_repeats(const std::vector<HopTransfer>& transfers, const Topology& topo, const System& sys) {
  std::vector<double> repeats(transfers.size(), 1.0);
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const HopTransfer& first = transfers[i];
    if (first.chunks <= 1 || first.hop_index != 0) continue;
    std::size_t slowest = i;
    double longest = -1;
    for (std::size_t j = i; j < i + static_cast<std::size_t>(first.hops); ++j) {
      const HopTime ht = hop_time(scaled(transfers[j], 1.0 / first.chunks), topo, sys);
      const double c = ht.transfer_s + ht.latency_s + sys.call_overhead_s;
      if (c > longest) longest = c, slowest = j;
    }
    repeats[slowest] = first.chunks;
  }
  return repeats;
}

// Communication, hop by hop (rank 0 stands for every rank; they differ only
// by a few bytes): fills the per-level times, bytes and calls, and the
// overlappable and step-phase totals; returns the exposed part (the first
// unit's gather, the last bucket's reduction, the step's own). Reductions
// move the engine's gradient bytes; an engine that accumulates a replicated
// plan's gradients locally reduces once per step, not per micro-batch. The
// tensor-parallel collectives carry `rows_seq` tokens per sequence (a
// context-parallel member's); `tensor_s` receives their time, every
// micro-batch's (a part of the step-phase total).
double price_communication(const SimInput& in, const Topology& topo, const TrainConfig& cfg, const GptLayout& layout, int rows_seq,
                           SimResult& r, double& tensor_s) {
  const Topology world = in.topology();
  const TensorMember member{layout.tp(), world, 0};
  std::vector<HopTransfer> transfers = step_transfers(in.plan, topo, cfg, 0, in.mesh.tp > 1 ? &member : nullptr);
  for (HopTransfer& h : tensor_transfers(in, world, 0, rows_seq)) transfers.push_back(h);
  const EngineProfile& e = in.engine;
  const double per_call = in.system.call_overhead_s;
  const bool per_module = e.calls == CallPattern::per_module;
  const auto modules = per_module ? module_fractions(layout) : std::vector<std::vector<double>>{};
  const std::vector<double> whole = {1.0};
  const double reduce_scale = (e.reduce_bytes > 0 ? e.reduce_bytes / static_cast<double>(dtype_size(in.dtype)) : 1.0) *
                              (e.accumulate_locally && !in.plan.params ? 1.0 / in.grad_accum : 1.0);
  // The data-parallel groups whose hops enter one package (node) through its links: with tensor, pipeline or context
  // parallelism on a level inside it, one per member of those groups (the world's ranks inside it over the data
  // topology's).
  const auto groups_inside = [&](Level boundary) {
    double n = 1;
    for (int l = 0; l <= static_cast<int>(boundary); ++l)
      n *= static_cast<double>(world.fanout(static_cast<Level>(l))) / topo.fanout(static_cast<Level>(l));
    return n;
  };
  const double package_groups = groups_inside(Level::package), node_groups = groups_inside(Level::node);
  double step_phase = 0, forward = 0, reduce = 0;
  for (HopTransfer& h : transfers)
    if (h.phase == Phase::reduce && !in.plan.quantized()) h = scaled(h, reduce_scale);
  const std::vector<double> repeats = per_module ? std::vector<double>(transfers.size(), 1.0) : pipeline_repeats(transfers, topo, in.system);
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const HopTransfer& h = transfers[i];
    double t = 0, longest = -1;  // the hop's calls: transfer, latency and call overheads
    int quant_level = 0;         // the quantisation is charged to the level bounding the hop's longest call
    if (h.chunks > 1 && !per_module) {  // one call per chunk, priced as pipeline_repeats says
      const HopTime ht = hop_time(scaled(h, 1.0 / h.chunks), topo, in.system);
      r.collective_calls += static_cast<std::size_t>(h.chunks);
      r.comm_time_s[ht.bottleneck] += repeats[i] * ht.transfer_s;
      r.latency_s[ht.latency_level] += repeats[i] * (ht.latency_s + per_call);
      t = repeats[i] * (ht.transfer_s + ht.latency_s + per_call);
      quant_level = ht.bottleneck;
    } else {
      for (double f : per_module && h.unit >= 0 ? modules[h.unit] : whole) {
        const HopTime ht = hop_time(f == 1.0 ? h : scaled(h, f), topo, in.system);
        r.collective_calls += 1;
        r.comm_time_s[ht.bottleneck] += ht.transfer_s;
        r.latency_s[ht.latency_level] += ht.latency_s + per_call;
        t += ht.transfer_s + ht.latency_s + per_call;
        if (ht.transfer_s > longest) longest = ht.transfer_s, quant_level = ht.bottleneck;
      }
    }
    const double q = in.system.memory_bandwidth_Bps > 0 ? 2.0 * static_cast<double>(h.quantized_bytes) / in.system.memory_bandwidth_Bps : 0;
    r.quant_s += q;
    r.quant_time_s[quant_level] += q;
    r.comm_s += t;
    if (h.phase == Phase::step || h.phase == Phase::tensor) step_phase += t;
    else r.overlappable_s += t + q;
    if (h.phase == Phase::tensor) tensor_s += t;
    if (h.phase == Phase::forward) forward += t + q, r.overlappable_by_kind.forward += t + q;
    if (h.phase == Phase::backward) r.overlappable_by_kind.backward += t + q;
    if (h.phase == Phase::reduce) reduce += t + q, r.overlappable_by_kind.reduce += t + q;
    for (int l = 0; l < kNumLevels; ++l) r.bytes_per_level[l] += h.bytes[l];
    const bool tensor = h.phase == Phase::tensor;  // a tensor group's collective, on the world's ranks
    r.package_link_bytes += hop_ingress(h, tensor ? world : topo, in.system, Level::package) * (tensor ? 1 : package_groups);
    r.node_nic_bytes += hop_ingress(h, tensor ? world : topo, in.system, Level::node) * (tensor ? 1 : node_groups);
  }
  const double units = static_cast<double>(layout.units().size()) * in.grad_accum;
  return forward / units + reduce / units + step_phase;
}

}  // namespace

std::string SimInput::attention_implementation() const {
  if (!attention.empty()) return attention;
  return system.device.attention_rate(engine.attention) ? engine.attention : "eager";
}

namespace {
// The compute of the step: every micro-batch's operations and the optimizer's update of this rank's shard.
ComputeTime compute_time(const SimInput& in, const Topology& topo, const GptLayout& layout, const std::vector<Op>& ops, SimResult& r) {
  const EngineProfile& e = in.engine;
  EngineProfile priced = e;
  priced.attention = op_options(in).attention;
  ComputeTime t = price_ops(ops, in.system, priced).scaled(in.grad_accum);
  r.gemm_s = t.gemm_s, r.attention_s = t.attention_s, r.memory_ops_s = t.memory_s, r.recompute_s = t.recompute_s;
  r.forward_s = t.forward_s, r.backward_s = t.backward_s + t.recompute_s;
  const StateLayouts states = StateLayouts::make(layout, topo, in.plan, 0);
  r.optimizer_s = in.plan.optim_offload.offloaded()
                      ? 0.0  // priced with the offload (offload_time)
                      : op_time(optimizer_op(static_cast<double>(states.optim.total), static_cast<double>(dtype_size(in.dtype))),
                                in.system, priced);
  return t;
}

// The offloaded optimizer's bytes per parameter of its shard in a step (optim_store.h): the host's AdamW
// (tierzero/optim.h) reads the fp32 gradient, master weight and two moments and writes the last three back, in host
// memory; on nvme the state (kOptimBytesPerParam) is read from its file and written back; over the host
// link, the gradient goes down and the new parameter comes up, in the parameter type.
constexpr double kOffloadHostMemoryBytesPerParam = 7 * sizeof(float);                 // 28
constexpr double kOffloadNvmeBytesPerParam = 2 * static_cast<double>(kOptimBytesPerParam);  // 24
constexpr double kOffloadHostLinkValuesPerParam = 2;

// The step's time for the offloaded states (tierzero/simulator.h); 0 when they are on the device.
double offload_time(const SimInput& in, const Topology& topo, const GptLayout& layout) {
  const Plan& p = in.plan;
  const System& sys = in.system;
  const StateLayouts states = StateLayouts::make(layout, topo, p, 0);
  double t = 0;
  if (p.optim_offload.offloaded()) {
    TZ_CHECK(sys.host_memory_Bps > 0, ConfigError,
             "system '" + sys.name + "' gives no host memory bandwidth (host_memory_gbs) to price the offloaded optimizer");
    TZ_CHECK(p.optim_offload.device != Offload::nvme || sys.nvme_Bps > 0, ConfigError,
             "system '" + sys.name + "' gives no NVMe rate (nvme_gbs) to price the optimizer offloaded to nvme");
    const auto params = static_cast<double>(states.optim.total);
    t += kOffloadHostMemoryBytesPerParam * params / sys.host_memory_Bps;
    if (sys.host_link_Bps > 0) t += kOffloadHostLinkValuesPerParam * static_cast<double>(dtype_size(in.dtype)) * params / sys.host_link_Bps;
    if (p.optim_offload.device == Offload::nvme) t += kOffloadNvmeBytesPerParam * params / sys.nvme_Bps;
  }
  if (p.param_offload.offloaded()) {
    TZ_CHECK(p.param_offload.device != Offload::nvme || sys.nvme_Bps > 0, ConfigError,
             "system '" + sys.name + "' gives no NVMe rate (nvme_gbs) to price the parameters offloaded to nvme");
    // Per micro-batch forward reads every unit, backward all but the embedding (its gradient needs no weights),
    // from the hpZ copy when there is one, which forward writes; the update writes the shard (param_store.h).
    const auto dsize = static_cast<double>(dtype_size(in.dtype));
    const double shard = static_cast<double>(states.params.total) * dsize, copy = static_cast<double>(states.bwd_params_bytes(in.dtype));
    const double embed = static_cast<double>((states.bwd_distinct ? states.bwd_params : states.params).shard[layout.embed_unit()]) * dsize;
    const double shard_io = in.grad_accum * (shard + (states.bwd_distinct ? 0 : shard - embed)) + shard;
    const double copy_io = states.bwd_distinct ? in.grad_accum * (2 * copy - embed) : 0.0;
    if (sys.host_link_Bps > 0) t += (shard_io + copy_io) / sys.host_link_Bps;
    if (p.param_offload.device == Offload::nvme) t += shard_io / sys.nvme_Bps;
  }
  return t;
}

// A pipeline's stage (sim/pipeline.h) on top of the data-parallel step: the schedule's bubble, slots of one
// micro-batch's forward and backward in which the stage waits, each as long as a stage takes for them: their compute
// and the collectives on their critical path, `exposed_per_micro_batch` (the warm-up's forwards and the cool-down's
// backwards run stage after stage, each with its tensor group's exposed collectives and its context ring's exposed
// steps, as in the steady state); each slot's activation in and gradient back, from and
// to the neighbouring stages (v per micro-batch interleaved), priced exposed, but for an interleaved schedule of an
// engine that overlaps them (EngineProfile::pipeline_p2p_overlap): there the 2 v m sends of the steady state each run
// beside the next chunk's forward or backward and only what outlasts it is exposed, the 2 (p - 1) of the warm-up and
// cool-down stay exposed; the first stage's in-flight activations.
void price_pipeline(const SimInput& stage, const ComputeTime& c, int seq_len, double exposed_per_micro_batch, SimResult& r) {
  const PipelineShape& p = stage.pipeline;
  const int m = stage.grad_accum;
  r.pipeline_bubble_s = (c.total() / m + exposed_per_micro_batch) * (schedule_slots(p, m) - m);
  r.compute_s += r.pipeline_bubble_s;
  const Topology world = stage.topology();
  const HopTransfer x = stage_transfer(stage, world, seq_len);
  const HopTime ht = hop_time(x, world, stage.system);
  const double steady = 2.0 * p.virtual_stages * m, edges = 2.0 * (p.stages - 1), sends = steady + edges;
  const double send_s = ht.transfer_s + ht.latency_s + stage.system.call_overhead_s;
  if (p.virtual_stages > 1 && stage.engine.pipeline_p2p_overlap) {
    const double chunks = static_cast<double>(p.virtual_stages) * m;  // a chunk: one virtual stage of one micro-batch
    const double forward = c.forward_s / chunks, backward = (c.backward_s + c.recompute_s) / chunks;
    r.pipeline_p2p_s = edges * send_s + steady / 2 * (std::max(0.0, send_s - forward) + std::max(0.0, send_s - backward));
  } else {
    r.pipeline_p2p_s = sends * send_s;
  }
  r.comm_s += r.pipeline_p2p_s;
  r.comm_time_s[ht.bottleneck] += sends * ht.transfer_s;
  r.latency_s[ht.latency_level] += sends * (ht.latency_s + stage.system.call_overhead_s);
  r.collective_calls += static_cast<std::uint64_t>(sends);
  for (int l = 0; l < kNumLevels; ++l) r.bytes_per_level[l] += 2 * static_cast<std::uint64_t>(p.virtual_stages) * m * x.bytes[l];
}

// What each micro-batch in flight keeps (its saved activations) is held once per micro-batch; the working set of the
// one block being recomputed (SavedActivations::recomputing, in the engines' "activations") once.
void hold_in_flight_activations(const SimInput& stage, int seq_len, SimResult& r) {
  const double in_flight = in_flight_micro_batches(stage.pipeline, stage.grad_accum);
  const double once = stage.engine.memory == MemoryMethod::allocations
                          ? 0.0
                          : saved_activations(stage.model, stage.micro_batch, seq_len, op_options(stage)).recomputing;
  r.memory_total = 0;
  for (auto& [part, bytes] : r.memory_bytes) {
    if (part == "activations") bytes = (bytes - once) * in_flight + once;
    r.memory_total += bytes;
  }
  r.judge_memory(stage.system.memory_bytes, stage.engine);
}

// The step of `in`: the job itself, or one of its pipeline's stages (sim/pipeline.h), whose FLOPs per token are the job's.
SimResult price_stage(const SimInput& in, const SimInput& job) {
  const bool piped = in.pipeline.stages > 1;
  const Topology topo = in.data_topology();  // the states, their collectives and their bytes are the data-parallel ranks'
  in.plan.validate(topo);
  const auto& offered = in.engine.recompute;
  if (std::find(offered.begin(), offered.end(), in.recompute.kind_name()) == offered.end()) {
    std::string names;
    for (const std::string& k : offered) names += (names.empty() ? "" : ", ") + k;
    TZ_THROW(ConfigError, "the " + in.engine.name + " engine does not recompute '" + in.recompute.name() + "' (it offers " + names + ")");
  }
  TZ_CHECK(in.mesh.tp == 1 || in.engine.tensor_parallel != TensorParallel::none, ConfigError,
           "the " + in.engine.name + " engine has no tensor parallelism (data/engines: tensor_parallel); use tp = 1");
  TrainConfig cfg;
  cfg.model = in.model;
  cfg.micro_batch = in.micro_batch;
  cfg.seq_len = in.seq_len;
  cfg.grad_accum = in.grad_accum;
  cfg.param_dtype = in.dtype;
  cfg.validate();
  const int seq_len = cfg.effective_seq_len();
  check_context(in, seq_len);
  const int rows_seq = seq_len / in.context.degree;  // a context-parallel member's tokens of each sequence
  in.mesh.check_sp(rows_seq);
  const GptLayout layout(in.model, largest_member(in.model, in.mesh.tp));  // the whole model at tp 1
  SimResult r;
  const std::vector<Op> ops = micro_batch_ops(in.model, in.micro_batch, seq_len, op_options(in));  // one micro-batch's
  const ComputeTime c = compute_time(in, topo, layout, ops, r);
  r.compute_s = c.total() + r.optimizer_s;
  price_context(in, seq_len, r);
  double tensor_s = 0;
  const double exposed = price_communication(in, topo, cfg, layout, rows_seq, r, tensor_s);
  r.offload_s = offload_time(in, topo, layout);
  // Forward gathers hide under the forward's compute, backward gathers and reductions under the backward's (and its
  // recomputation), each kind by the system's overlap times the engine's (backward gathers issued after the unit's
  // backward hide under nothing); compute beside them slows by the engine's overlap_slowdown.
  const Overlap& so = in.system.overlap;
  const Overlap& eo = in.engine.overlap;
  const Overlap& o = r.overlappable_by_kind;
  const double hidden_f = so.forward * eo.forward * std::min(o.forward, c.forward_s);
  const double backward_gathers = in.engine.backward_prefetch == BackwardPrefetch::post ? 0.0 : eo.backward;
  // An engine that reduces once per step (accumulate_locally, the gradients not partitioned) runs the reduction in
  // the last micro-batch's backward: it can hide under that one only.
  const double backward = c.backward_s + c.recompute_s;
  const double reduce_cover = in.engine.accumulate_locally && !in.plan.params ? backward / in.grad_accum : backward;
  const double hidden_b = std::min(so.backward * backward_gathers * o.backward + std::min(so.reduce * eo.reduce * o.reduce, reduce_cover), backward);
  // The tensor-parallel input-gradient collectives the engine runs under the weight gradients' GEMMs (and, sequence
  // parallel, the saved inputs' gathers under the input gradients').
  const double hidden_t = tensor_overlap_hidden(in, in.topology(), rows_seq, ops);
  r.tensor_exposed_s = std::max(0.0, tensor_s - hidden_t);
  if (piped) price_pipeline(in, c, rows_seq, (r.tensor_exposed_s + r.context_exposed_s) / in.grad_accum, r);
  r.step_time_s = r.compute_s + r.overlappable_s + exposed - (hidden_f + hidden_b) * (1 - in.engine.overlap_slowdown) - hidden_t +
                  r.offload_s + r.pipeline_p2p_s + r.context_exposed_s;
  r.exposed_comm_s = r.step_time_s - r.compute_s - r.offload_s;
  const double tokens = static_cast<double>(in.micro_batch) * seq_len * in.grad_accum;
  // A tensor-parallel group's members, a pipeline's stages and a context-parallel group's members compute one data
  // rank's tokens together.
  const int devices = in.mesh.tp * in.pipeline.stages * in.context.degree;
  r.tokens_per_s_per_device = tokens / r.step_time_s / devices;
  r.tflops_per_device = job.model.flops_per_token(seq_len) * tokens / r.step_time_s / 1e12 / devices;
  memory_per_rank(in, topo, layout, seq_len, r);
  if (piped) hold_in_flight_activations(in, seq_len, r);
  return r;
}
}  // namespace

// A pipeline's step waits on its slowest stage, and the device must hold its most loaded one: the slowest stage's
// result with the memory of the stage that needs the most.
SimResult simulate(const SimInput& job) {
  const std::vector<SimInput> stages = pipeline_stages(job);
  if (stages.empty()) return price_stage(job, job);
  SimResult slowest = price_stage(stages[0], job);
  SimResult fullest = slowest;
  for (std::size_t i = 1; i < stages.size(); ++i) {
    const SimResult r = price_stage(stages[i], job);
    if (r.memory_total > fullest.memory_total) fullest = r;
    if (r.step_time_s > slowest.step_time_s) slowest = r;
  }
  slowest.memory_bytes = fullest.memory_bytes;
  slowest.memory_total = fullest.memory_total;
  slowest.largest_allocation = fullest.largest_allocation;
  slowest.host_bytes = fullest.host_bytes, slowest.file_bytes = fullest.file_bytes;
  slowest.judge_memory(job.system.memory_bytes, job.engine);
  return slowest;
}

}  // namespace tierzero
