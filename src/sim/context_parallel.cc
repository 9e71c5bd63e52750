#include "sim/context_parallel.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/compute_model.h"
#include "sim/hop_time.h"
#include "sim/op_list.h"
#include "tierzero/error.h"

namespace tierzero {

Level ContextShape::level_in(const Topology& ranks) const {
  if (level) return *level;
  for (const Level l : ranks.levels())
    if (ranks.fanout(l) > 1) return l;
  return ranks.levels().front();
}

std::string ContextShape::kind_name() const { return kind == Kind::a2a ? "a2a" : "ring"; }

ContextShape::Kind ContextShape::parse_kind(std::string_view name) {
  TZ_CHECK(name == "ring" || name == "a2a", ConfigError,
           "context-parallel kind '" + std::string(name) + "': ring (key/value chunks around the group) or a2a (Ulysses' all-to-alls)");
  return name == "a2a" ? Kind::a2a : Kind::ring;
}

void check_context(const SimInput& in, int seq_len) {
  const ContextShape& c = in.context;
  const std::string degree = "cp = " + std::to_string(c.degree);
  TZ_CHECK(c.degree >= 1, ConfigError, degree + ": the context-parallel degree must be at least 1");
  if (c.degree == 1) return;
  const std::vector<std::string>& offered = in.engine.context_parallel;
  std::string runs;
  for (const std::string& k : offered) runs += (runs.empty() ? "" : ", ") + k;
  TZ_CHECK(!offered.empty(), ConfigError,
           "the " + in.engine.name + " engine has no context parallelism (data/engines: context_parallel); use cp = 1");
  TZ_CHECK(std::find(offered.begin(), offered.end(), c.kind_name()) != offered.end(), ConfigError,
           "the " + in.engine.name + " engine does not run " + c.kind_name() + " context parallelism (it runs " + runs +
               "; data/engines: context_parallel)");
  const int tp = in.mesh.tp, pp = in.pipeline.stages, model_parallel = tp * pp * c.degree;
  TZ_CHECK(in.ranks % model_parallel == 0, ConfigError,
           "tp " + std::to_string(tp) + " x pp " + std::to_string(pp) + " x cp " + std::to_string(c.degree) + " = " +
               std::to_string(model_parallel) + " does not divide the job's " + std::to_string(in.ranks) +
               " ranks (tp x pp x cp x dp must be the rank count)");
  const Topology ranks = in.data_topology();
  factor_level(ranks, c.level_in(ranks), c.degree, degree, "cp_level");
  const std::string kind = degree + " (" + c.kind_name() + ")";
  if (c.kind == ContextShape::Kind::ring) {
    TZ_CHECK(seq_len % (2 * c.degree) == 0, ConfigError,
             kind + " needs the sequence length " + std::to_string(seq_len) + " divisible by 2 x cp = " + std::to_string(2 * c.degree) +
                 " (two chunks per member balance the causal mask)");
    TZ_CHECK(in.attention_implementation() != "eager", ConfigError,
             kind + " runs inside a fused attention kernel; the attention priced is eager (--attention)");
    return;
  }
  TZ_CHECK(seq_len % c.degree == 0, ConfigError,
           kind + " needs the sequence length " + std::to_string(seq_len) + " divisible by cp");
  const int heads = in.model.heads / tp, kv = tp_local_kv(in.model, tp);
  TZ_CHECK(heads % c.degree == 0 && kv % c.degree == 0, ConfigError,
           kind + " needs the heads per tensor-parallel member (" + std::to_string(heads) + " query, " + std::to_string(kv) +
               " key/value) divisible by cp");
}

std::uint64_t ring_step_bytes(const SimInput& in, int seq_len) {
  const auto width = static_cast<std::uint64_t>(tp_local_kv(in.model, in.mesh.tp)) * static_cast<std::uint64_t>(in.model.head_size());
  const auto tokens = static_cast<std::uint64_t>(in.micro_batch) * static_cast<std::uint64_t>(seq_len / in.context.degree);
  return 2 * width * tokens * static_cast<std::uint64_t>(in.engine.activation_bytes);
}

std::uint64_t ulysses_bytes(const SimInput& in, int seq_len, std::uint64_t width) {
  const auto cp = static_cast<std::uint64_t>(in.context.degree);
  const auto tokens = static_cast<std::uint64_t>(in.micro_batch) * static_cast<std::uint64_t>(seq_len) / cp;
  return tokens * (width / cp) * (cp - 1) * static_cast<std::uint64_t>(in.engine.activation_bytes);
}

double attention_recomputed_blocks(const GptConfig& model, const Recompute& r) {
  const double L = model.layers;
  switch (r.kind) {
    case Recompute::Kind::full:
    case Recompute::Kind::selective: return L;
    case Recompute::Kind::every: return L / r.every;
    case Recompute::Kind::ops:
    case Recompute::Kind::none: break;
  }
  return 0;
}

void price_context(const SimInput& in, int seq_len, SimResult& r) {
  const ContextShape& c = in.context;
  if (c.degree == 1) return;
  const Topology world = in.topology();
  const int level = static_cast<int>(c.level_in(in.data_topology()));
  const System& sys = in.system;
  const double m = in.grad_accum, L = in.model.layers;
  const double forward_blocks = m * (L + attention_recomputed_blocks(in.model, in.recompute)), backward_blocks = m * L;
  // `times` transfers of `bytes` on the context level, into the step's totals; returns one's time.
  const auto transfers = [&](Collective k, int size, std::uint64_t bytes, double times) {
    HopTransfer x{Phase::context, k, size, {}, 0, -1};
    x.bytes[level] = bytes;
    const HopTime ht = hop_time(x, world, sys);
    const double one = ht.transfer_s + ht.latency_s + sys.call_overhead_s;
    r.context_comm_s += times * one;
    r.comm_time_s[ht.bottleneck] += times * ht.transfer_s;
    r.latency_s[ht.latency_level] += times * (ht.latency_s + sys.call_overhead_s);
    r.collective_calls += static_cast<std::uint64_t>(std::llround(times));
    r.bytes_per_level[level] += static_cast<std::uint64_t>(std::llround(times * static_cast<double>(bytes)));
    return one;
  };
  if (c.kind == ContextShape::Kind::a2a) {
    // q and the output: the member's heads; k and v: its key/value heads; each block's four, forward and backward.
    const auto d = static_cast<std::uint64_t>(in.model.head_size()), tp = static_cast<std::uint64_t>(in.mesh.tp);
    const std::uint64_t q = static_cast<std::uint64_t>(in.model.heads) * d / tp, kv = static_cast<std::uint64_t>(tp_local_kv(in.model, in.mesh.tp)) * d;
    for (const std::uint64_t width : {q, kv, kv, q})
      transfers(Collective::all_to_all, c.degree, ulysses_bytes(in, seq_len, width), forward_blocks + backward_blocks);
    r.context_exposed_s = r.context_comm_s;
  } else {
    // One of the ring's attention kernels (a block's 1/cp), forward and backward, beside which one transfer runs.
    const OpOptions o = op_options(in);
    EngineProfile priced = in.engine;
    priced.attention = o.attention;
    double kernel[2] = {0, 0};
    for (const Op& op : micro_batch_ops(in.model, in.micro_batch, seq_len, o))
      if (op.kind == OpKind::attention && op.pass != OpPass::recompute) {
        Op one = op;
        one.count = 1;
        kernel[op.attention_backward ? 1 : 0] = op_time(one, sys, priced);
      }
    const double steps = c.degree - 1;
    const std::uint64_t bytes = ring_step_bytes(in, seq_len);
    const double forward = transfers(Collective::all_gather, 2, bytes, steps * forward_blocks);
    const double backward = transfers(Collective::all_gather, 2, 2 * bytes, steps * backward_blocks);
    r.context_exposed_s =
        steps * (forward_blocks * std::max(0.0, forward - kernel[0]) + backward_blocks * std::max(0.0, backward - kernel[1]));
  }
  r.comm_s += r.context_comm_s;
}

}  // namespace tierzero
