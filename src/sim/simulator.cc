#include "tierzero/sim.h"

#include <algorithm>
#include <cmath>

#include "sim/hop_algorithm.h"
#include "tierzero/error.h"
#include "tierzero/traffic_model.h"

namespace tierzero {

std::string_view engine_name(Engine e) { return e == Engine::tierzero ? "tierzero" : "deepspeed"; }

Engine parse_engine(std::string_view s) {
  if (s == "tierzero") return Engine::tierzero;
  if (s == "deepspeed") return Engine::deepspeed;
  TZ_THROW(ConfigError, "unknown engine '" + std::string(s) + "' (expected tierzero or deepspeed)");
}

EngineModel engine_model(Engine e) {
  EngineModel m;
  if (e == Engine::deepspeed) {
    // DeepSpeed ZeRO-3 fetches each submodule's parameters from its own
    // pre-forward/pre-backward hook (DeepSpeed docs, "ZeRO-3": parameters are
    // gathered per module); a Megatron-DeepSpeed GPT block has six
    // parameterised modules (two LayerNorms, QKV, attention output, two MLP
    // linears), the embedding two (word, position), the head one (final
    // LayerNorm). Overlap and per-call overhead: docs/simulator.md, "DeepSpeed".
    m.calls_per_embed = 2, m.calls_per_block = 6, m.calls_per_head = 1;
    m.overlap = {0.25, 0.25, 0.25};
  }
  return m;
}

Topology SimInput::topology() const {
  if (topology_spec.empty()) return system.topology(ranks);
  Topology t = Topology::parse(topology_spec, ranks);
  for (Level l : t.levels()) system.link(l);  // throws ConfigError naming a level the system lacks
  return t;
}

// How the system's collective library moves a hop (System::collectives).
// ring: every rank's bytes pass along one chain of ranks; the chain leaves
// each group below level l once, so the hop's ranks inside one such group
// share that group's links at level l: the chain's rate there is
// Q_l * bandwidth_l, Q_l the product of the hop's fan-outs inside level l
// (a flat all-gather over the 8 GCDs of a Frontier node uses the node's
// four NICs, 8 x 12.5 GB/s; the world hop of a hierarchical one runs 8
// chains at once, 12.5 GB/s each); transfer = all bytes / the slowest rate.
// direct: each level's bytes go straight to the peers over that level's
// link, levels in parallel; transfer = max_l bytes_l / bandwidth_l.
// tree (Open MPI libnbc's reduce-scatter): a binomial reduce of the whole
// buffer M to one rank — ceil(log2 f_l) rounds across each level l, one
// sender per group below l, M / (Q_l bandwidth_l) each — then that rank
// sends every other its piece, bytes_l across level l at Q_l bandwidth_l.
// halving (libnbc's all-reduce over 2^k ranks): the steps run one after
// another, each rank over its own link: Σ_l halving_bytes_l / bandwidth_l,
// and 2 log2(size) latencies. Every other peer costs one latency of the
// hop's slowest level. A level's rate is
// its achieved bandwidth for the hop's participants and shard size
// (LinkSpec::bandwidth_at).
HopTime hop_time(const HopTransfer& h, const Topology& topo, const System& sys) {
  using Algo = HopAlgorithm;
  const Algo algo = hop_algorithm(h, sys);
  HopTime out;
  double total = 0, inner = 1, ring_rate = 0, alpha = 0, worst = 0;
  const double whole = hop_buffer(h);
  const std::array<double, kNumLevels> halving = algo == Algo::halving ? halving_bytes(h, topo) : std::array<double, kNumLevels>{};
  for (int l = 0; l < kNumLevels; ++l) {
    if (h.bytes[l] == 0) continue;
    const Level level = static_cast<Level>(l);
    const LinkSpec& link = sys.link(level);
    // The level's rate for a collective of this many ranks and this shard size (the link rate without a table).
    const double bandwidth = link.bandwidth_at(h.hop_size, h.hop_size > 0 ? whole / h.hop_size : 0.0);
    const double bytes = static_cast<double>(h.bytes[l]), rate = inner * bandwidth;
    total += bytes;
    if (link.latency_s >= alpha) alpha = link.latency_s, out.latency_level = l;
    double t = 0;
    if (algo == Algo::direct) t = bytes / bandwidth;
    if (algo == Algo::halving) t = halving[l] / bandwidth, out.transfer_s += t;
    if (algo == Algo::tree) t = bytes / rate, out.transfer_s += std::ceil(std::log2(topo.fanout(level))) * whole / rate;
    if (algo == Algo::ring && (ring_rate == 0 || rate <= ring_rate)) ring_rate = rate, out.bottleneck = l;  // ties: the outer level
    if (algo != Algo::ring && t > worst) worst = t, out.bottleneck = l;
    inner *= topo.fanout(level);
  }
  if (algo != Algo::halving) out.transfer_s += algo == Algo::ring ? (ring_rate > 0 ? total / ring_rate : 0.0) : worst;
  out.latency_s = (algo == Algo::halving ? 2 * std::log2(h.hop_size) : h.hop_size - 1) * alpha;
  return out;
}

namespace {
double shard_total(const GptLayout& layout, const Topology& t, const Partition& p) {
  const int g = partition_group_size(t, p);
  double s = 0;
  for (const UnitInfo& u : layout.units()) s += static_cast<double>((u.numel + g - 1) / g);
  return s;
}
}  // namespace

SimResult simulate(const SimInput& in) {
  const Topology topo = in.topology();
  in.plan.validate(topo);
  TrainConfig cfg;
  cfg.model = in.model;
  cfg.micro_batch = in.micro_batch;
  cfg.seq_len = in.seq_len;
  cfg.grad_accum = in.grad_accum;
  cfg.param_dtype = in.dtype;
  cfg.validate();
  const int T = cfg.effective_seq_len();
  const GptLayout layout(in.model);
  SimResult r;

  // Compute.
  const double tokens = static_cast<double>(in.micro_batch) * T * in.grad_accum;
  const double model_flops = in.model.flops_per_token(T) * tokens;
  r.compute_s = model_flops * (in.recompute ? 4.0 / 3.0 : 1.0) / (in.system.peak_flops * in.system.compute_efficiency);

  // Communication, hop by hop (rank 0 stands for every rank; they differ only by a few bytes).
  const std::vector<HopTransfer> hops = step_transfers(in.plan, topo, cfg, 0);
  const EngineModel engine = engine_model(in.engine);
  const double per_call = in.system.call_overhead_s + engine.call_overhead_s;
  double overlappable = 0, step_phase = 0, forward = 0, reduce = 0;
  for (const HopTransfer& h : hops) {
    const HopTime ht = hop_time(h, topo, in.system);
    const int calls = h.unit < 0 ? 1
                      : h.unit == layout.embed_unit() ? engine.calls_per_embed
                      : h.unit == layout.head_unit()  ? engine.calls_per_head
                                                      : engine.calls_per_block;
    r.collective_calls += static_cast<std::uint64_t>(calls);
    r.comm_time_s[ht.bottleneck] += ht.transfer_s;
    r.latency_s[ht.latency_level] += calls * (ht.latency_s + per_call);
    const double t = ht.transfer_s + calls * (ht.latency_s + per_call);
    const double q = in.system.memory_bandwidth_Bps > 0 ? 2.0 * static_cast<double>(h.quantized_bytes) / in.system.memory_bandwidth_Bps : 0;
    r.quant_s += q;
    r.quant_time_s[ht.bottleneck] += q;
    r.comm_s += t;
    if (h.phase == Phase::step) step_phase += t;
    else overlappable += t + q;
    if (h.phase == Phase::forward) forward += t + q, r.overlappable_by_kind.forward += t + q;
    if (h.phase == Phase::backward) r.overlappable_by_kind.backward += t + q;
    if (h.phase == Phase::reduce) reduce += t + q, r.overlappable_by_kind.reduce += t + q;
    for (int l = 0; l < kNumLevels; ++l) r.bytes_per_level[l] += h.bytes[l];
    r.package_link_bytes += hop_ingress(h, topo, in.system, Level::package);
    r.node_nic_bytes += hop_ingress(h, topo, in.system, Level::node);
  }
  const double units = static_cast<double>(layout.units().size()) * in.grad_accum;
  const double exposed = forward / units + reduce / units + step_phase;  // first gather, last bucket, step
  r.overlappable_s = overlappable;
  const Overlap& o = in.system.overlap;
  const Overlap& by = r.overlappable_by_kind;
  const double weighted = o.forward * engine.overlap.forward * by.forward + o.backward * engine.overlap.backward * by.backward +
                          o.reduce * engine.overlap.reduce * by.reduce;
  const double overlap = overlappable > 0 ? weighted / overlappable : 0.0;
  r.step_time_s = r.compute_s + overlappable + exposed - overlap * std::min(r.compute_s, overlappable);
  r.exposed_comm_s = r.step_time_s - r.compute_s;
  r.tflops_per_device = model_flops / r.step_time_s / 1e12;

  // Memory.
  const double d = static_cast<double>(dtype_size(in.dtype));
  const Plan& p = in.plan;
  const double s = T, b = in.micro_batch, h = in.model.channels, a = in.model.heads, L = in.model.layers, V = in.model.vocab;
  const double per_layer = in.recompute ? 2 * s * b * h : s * b * h * (34 + 5 * a * s / h);
  const double activations = L * per_layer + (in.recompute ? s * b * h * (34 + 5 * a * s / h) : 0) + 2 * 4 * s * b * V;
  std::size_t max_unit = 0;
  for (const UnitInfo& u : layout.units()) max_unit = std::max(max_unit, u.numel);
  const double grads_total = 4 * shard_total(layout, topo, p.grads);
  const double buffers = (p.prefetch + 1) * static_cast<double>(max_unit) * d + static_cast<double>(layout.units()[0].numel) * d +
                         2 * std::min(static_cast<double>(p.bucket_bytes), grads_total);
  r.memory_bytes = {{"params", d * shard_total(layout, topo, p.params)},
                    {"bwd_params", p.bwd_params != p.params ? d * shard_total(layout, topo, p.bwd_params) : 0.0},
                    {"grads", grads_total},
                    {"optim", 12 * shard_total(layout, topo, p.optim)},
                    {"activations", activations},
                    {"buffers", buffers}};
  for (const auto& [k, v] : r.memory_bytes) r.memory_total += v;
  r.fits = r.memory_total <= in.system.memory_bytes;
  return r;
}

}  // namespace tierzero
