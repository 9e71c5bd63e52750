#include "tierzero/simulator.h"

#include <algorithm>
#include <cmath>

#include "sim/hop_time.h"
#include "tierzero/error.h"
#include "plan/shard_layout.h"
#include "sim/traffic_model.h"

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
    // LayerNorm): module_fractions below. Overlap and per-call overhead:
    // docs/simulator.md, "DeepSpeed".
    m.fetch_per_module = true;
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

// Compute: model FLOPs / (peak x efficiency), one more forward with recomputation.
double compute_time(const SimInput& in, double model_flops) {
  return model_flops * (in.recompute ? 4.0 / 3.0 : 1.0) / (in.system.peak_flops * in.system.compute_efficiency);
}

// Communication, hop by hop (rank 0 stands for every rank; they differ only
// by a few bytes): fills the per-level times, bytes and calls, and the
// overlappable, exposed and step-phase totals; returns the exposed part
// (the first unit's gather, the last bucket's reduction, the step's own).
double price_communication(const SimInput& in, const Topology& topo, const TrainConfig& cfg, const GptLayout& layout, SimResult& r) {
  const EngineModel engine = engine_model(in.engine);
  const double per_call = in.system.call_overhead_s + engine.call_overhead_s;
  const auto modules = engine.fetch_per_module ? module_fractions(layout) : std::vector<std::vector<double>>{};
  const std::vector<double> whole = {1.0};
  double step_phase = 0, forward = 0, reduce = 0;
  for (const HopTransfer& h : step_transfers(in.plan, topo, cfg, 0)) {
    double t = 0, longest = -1;  // the hop's calls: transfer, latency and call overheads
    int quant_level = 0;         // the quantisation is charged to the level bounding the hop's longest call
    for (double f : engine.fetch_per_module && h.unit >= 0 ? modules[h.unit] : whole) {
      const HopTime ht = hop_time(f == 1.0 ? h : scaled(h, f), topo, in.system);
      r.collective_calls += 1;
      r.comm_time_s[ht.bottleneck] += ht.transfer_s;
      r.latency_s[ht.latency_level] += ht.latency_s + per_call;
      t += ht.transfer_s + ht.latency_s + per_call;
      if (ht.transfer_s > longest) longest = ht.transfer_s, quant_level = ht.bottleneck;
    }
    const double q = in.system.memory_bandwidth_Bps > 0 ? 2.0 * static_cast<double>(h.quantized_bytes) / in.system.memory_bandwidth_Bps : 0;
    r.quant_s += q;
    r.quant_time_s[quant_level] += q;
    r.comm_s += t;
    if (h.phase == Phase::step) step_phase += t;
    else r.overlappable_s += t + q;
    if (h.phase == Phase::forward) forward += t + q, r.overlappable_by_kind.forward += t + q;
    if (h.phase == Phase::backward) r.overlappable_by_kind.backward += t + q;
    if (h.phase == Phase::reduce) reduce += t + q, r.overlappable_by_kind.reduce += t + q;
    for (int l = 0; l < kNumLevels; ++l) r.bytes_per_level[l] += h.bytes[l];
    r.package_link_bytes += hop_ingress(h, topo, in.system, Level::package);
    r.node_nic_bytes += hop_ingress(h, topo, in.system, Level::node);
  }
  const double units = static_cast<double>(layout.units().size()) * in.grad_accum;
  return forward / units + reduce / units + step_phase;
}

// The overlap of the three kinds (system x engine), weighted by their times.
double weighted_overlap(const SimInput& in, const SimResult& r) {
  const Overlap& o = in.system.overlap;
  const Overlap e = engine_model(in.engine).overlap;
  const Overlap& by = r.overlappable_by_kind;
  const double weighted = o.forward * e.forward * by.forward + o.backward * e.backward * by.backward + o.reduce * e.reduce * by.reduce;
  return r.overlappable_s > 0 ? weighted / r.overlappable_s : 0.0;
}

// Memory per rank, by state (docs/simulator.md).
void memory_per_rank(const SimInput& in, const Topology& topo, const GptLayout& layout, int seq_len, SimResult& r) {
  const double bytes_per_param = static_cast<double>(dtype_size(in.dtype));
  const Plan& p = in.plan;
  const GptConfig& m = in.model;
  const double tokens = static_cast<double>(seq_len), batch = in.micro_batch, width = m.channels, heads = m.heads, vocab = m.vocab;
  // Korthikanti et al. 2022 (16-bit activations, per layer): s b h (34 + 5 a s / h) bytes for GPT, 2 s b h with
  // recomputation (plus one layer's full set). Their terms, per s b h: attention 2 (QKV input) + 2 (Q) + 2 + 2 (K, V)
  // + 2 (output projection input) + 1 (dropout mask), scores 2 a s / h (softmax) + 3 a s / h (dropout mask and
  // output); MLP 2 (input) + 2 F/h (GELU input) + 2 F/h (down input) + 1 (dropout mask); norms 4. The Llama family
  // trains without dropout, its K and V are KV/H of Q's, and SwiGLU keeps gate, up and their product (3 x 2 F/h).
  const bool dropout = m.family() == "gpt2";
  const double kv = static_cast<double>(m.kv()) / m.heads, ffn = static_cast<double>(m.ffn_size()) / m.channels;
  const double attention = 6 + 4 * kv + (dropout ? 1 : 0), scores = 2 + (dropout ? 3 : 0);
  const double mlp = m.mlp == Mlp::swiglu ? 2 + 6 * ffn : 2 + 4 * ffn + (dropout ? 1 : 0);
  const double full_layer = tokens * batch * width * (attention + mlp + 4 + scores * heads * tokens / width);
  const double per_layer = in.recompute ? 2 * tokens * batch * width : full_layer;
  const double logits = 2 * 4 * tokens * batch * vocab;  // fp32 logits and their gradient
  const double activations = in.model.layers * per_layer + (in.recompute ? full_layer : 0) + logits;
  std::size_t max_unit = 0;
  for (const UnitInfo& u : layout.units()) max_unit = std::max(max_unit, u.numel);
  const StateLayouts states = StateLayouts::make(layout, topo, p, 0);  // what the engine allocates (every rank alike)
  const auto grads_total = static_cast<double>(states.grads_bytes());
  const double buffers = (p.prefetch + 1) * static_cast<double>(max_unit) * bytes_per_param +
                         (m.tied ? static_cast<double>(layout.units()[0].numel) * bytes_per_param : 0.0) +  // a tied head's wte
                         2 * std::min(static_cast<double>(p.bucket_bytes), grads_total);
  const auto optim = static_cast<double>(states.optim_bytes());
  const auto params = static_cast<double>(states.params_bytes(in.dtype)), bwd = static_cast<double>(states.bwd_params_bytes(in.dtype));
  const bool params_off = p.param_offload.offloaded();
  r.memory_bytes = {{"params", params_off ? 0.0 : params},
                    {"bwd_params", params_off ? 0.0 : bwd},
                    {"grads", grads_total},
                    {"optim", p.optim_offload.offloaded() ? 0.0 : optim},
                    {"activations", activations},
                    {"buffers", buffers}};
  for (const auto& [k, v] : r.memory_bytes) r.memory_total += v;
  r.fits = r.memory_total <= in.system.memory_bytes;
  // Offloaded states (optim_store.h, param_store.h): in host memory (cpu), or in files with a few units' worth of
  // host buffers (nvme); an hpZ copy of offloaded params stays in host memory.
  if (p.optim_offload.device == Offload::cpu) r.host_bytes += optim;
  if (p.optim_offload.device == Offload::nvme)
    r.file_bytes += optim, r.host_bytes += p.optim_offload.buffers * 3 * sizeof(float) * static_cast<double>(states.optim.largest_shard());
  if (params_off) r.host_bytes += bwd;
  if (p.param_offload.device == Offload::cpu) r.host_bytes += params;
  if (p.param_offload.device == Offload::nvme)
    r.file_bytes += params, r.host_bytes += p.param_offload.buffers * bytes_per_param * static_cast<double>(states.params.largest_shard());
}

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
    t += 28 * params / sys.host_memory_Bps;
    if (sys.host_link_Bps > 0) t += 2 * static_cast<double>(dtype_size(in.dtype)) * params / sys.host_link_Bps;
    if (p.optim_offload.device == Offload::nvme) t += 24 * params / sys.nvme_Bps;
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
  const int seq_len = cfg.effective_seq_len();
  const GptLayout layout(in.model);
  SimResult r;
  const double model_flops = in.model.flops_per_token(seq_len) * static_cast<double>(in.micro_batch) * seq_len * in.grad_accum;
  r.compute_s = compute_time(in, model_flops);
  const double exposed = price_communication(in, topo, cfg, layout, r);
  r.offload_s = offload_time(in, topo, layout);
  r.step_time_s = r.compute_s + r.overlappable_s + exposed - weighted_overlap(in, r) * std::min(r.compute_s, r.overlappable_s) + r.offload_s;
  r.exposed_comm_s = r.step_time_s - r.compute_s - r.offload_s;
  r.tflops_per_device = model_flops / r.step_time_s / 1e12;
  memory_per_rank(in, topo, layout, seq_len, r);
  return r;
}

}  // namespace tierzero
