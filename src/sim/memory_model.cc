#include "sim/memory_model.h"

#include <algorithm>
#include <cmath>

#include "comm/hier/hop_plan.h"
#include "comm/hier/scratch_sizes.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "plan/engine_buffers.h"
#include "plan/grad_buckets.h"
#include "plan/shard_layout.h"
#include "sim/op_list.h"

namespace tierzero {

namespace {
using Parts = std::vector<std::pair<std::string, double>>;

// The topology of a group(part) (the world when not partitioned): the levels above it have fan-out 1.
Topology group_topology(const Topology& topo, const Partition& part) {
  std::array<int, kNumLevels> f{};
  for (int i = 0; i < kNumLevels; ++i) f[i] = !part || i <= static_cast<int>(*part) ? topo.fanout(static_cast<Level>(i)) : 1;
  return Topology(f, topo.levels());
}

// The engine's hierarchies' scratch after a step (comm/hier/scratch_sizes.h): the forward and backward gathers of
// every gathered unit (qwZ's when the weights are quantised; hpZ's from bwd_params), the reduction of every bucket
// (all-reduce, reduce-scatter or qgZ's), and the gathers of units rebuilt after the update. Each buffer reaches its
// largest use: the largest call's when whole, while with pipelined hops a call smaller than a chunk runs whole in
// buffers of its own.
double comm_scratch(const Plan& p, const Topology& topo, const GptLayout& layout, const StateLayouts& states, std::size_t dsize,
                    const std::vector<GradBucket>& buckets) {
  QuantSpec q;
  q.block = p.quant_block;
  q.bits = p.weight_bits == 16 ? q.bits : p.weight_bits;
  const bool bwd = states.bwd_distinct && p.bwd_params;
  ScratchSizes params(group_topology(topo, p.params), hop_spec(p.gather), p.hop_chunk_bytes);
  ScratchSizes bwd_params(group_topology(topo, p.bwd_params), hop_spec(p.gather), p.hop_chunk_bytes);
  ScratchSizes g(group_topology(topo, p.grads), hop_spec(p.reduce), p.hop_chunk_bytes);
  for (std::size_t u = 0; u < layout.units().size(); ++u) {
    if (p.params && !states.params.whole[u]) {
      if (p.weight_bits == 16) params.all_gather(states.params.shard[u], dsize);
      else params.all_gather_quantized(states.params.shard[u], dsize, q);
    }
    if (bwd && !states.bwd_params.whole[u]) bwd_params.all_gather(states.bwd_params.shard[u], dsize);
    if (p.rebuilt_after_update(layout.units()[u].numel)) g.all_gather(states.optim.shard[u], dsize);
  }
  for (const GradBucket& b : buckets) {
    if (!p.grads) g.all_reduce(b.count, dsize);
    else if (p.quantized()) g.reduce_scatter_quantized(b.count, dsize, p.grad_bits, q);
    else g.reduce_scatter(b.count, dsize);
  }
  return static_cast<double>((p.params ? params.total() : 0) + (bwd ? bwd_params.total() : 0) + g.total());
}

// The offloaded states' host memory and files (optim_store.h, param_store.h): in host memory (cpu), or in files with
// a few units' worth of host buffers (nvme); an hpZ copy of offloaded params stays in host memory.
void offloaded(const Plan& p, const StateLayouts& states, double dsize, SimResult& r) {
  const auto optim = static_cast<double>(states.optim_bytes());
  const auto params = static_cast<double>(states.params.total) * dsize, bwd = static_cast<double>(states.bwd_params.total) * dsize;
  if (p.optim_offload.device == Offload::cpu) r.host_bytes += optim;
  if (p.optim_offload.device == Offload::nvme)
    r.file_bytes += optim, r.host_bytes += p.optim_offload.buffers * kOptimBytesPerParam * static_cast<double>(states.optim.largest_shard());
  if (p.param_offload.offloaded() && states.bwd_distinct) r.host_bytes += bwd;
  if (p.param_offload.device == Offload::cpu) r.host_bytes += params;
  if (p.param_offload.device == Offload::nvme)
    r.file_bytes += params, r.host_bytes += p.param_offload.buffers * dsize * static_cast<double>(states.params.largest_shard());
}

// What Open MPI itself allocates for tierzero's gradient reduction on CPU ranks, whose collectives are MPI's. Its
// non-blocking reduce-scatter (Open MPI 4.1, coll/libnbc, nbc_ireduce_scatter_block.c) mallocs two copies of the
// whole send buffer per call and reduces by recursive halving through them; rank 0 receives in every round and so
// writes one copy in a group of two, both in a larger one. The reducer keeps one bucket of each of its two buffers in
// flight; each bucket's reduce-scatter makes the calls of its hop plan (comm/hier/hop_plan.h): one at a time when
// whole (the first hop's, which sends the whole bucket, is the largest), one per hop at once on chunks when its hops
// are pipelined. Quantised reductions (all-to-all) and all-reduces are not counted.
double mpi_reduce_temporaries(const Plan& p, const Topology& topo, const std::vector<GradBucket>& buckets, double dsize) {
  if (!p.grads || p.quantized()) return 0;
  const std::vector<HopGroup> hops = hop_groups(group_topology(topo, p.grads), hop_spec(p.reduce));
  double total = 0;
  for (const std::size_t count : bucket_buffer_counts(buckets)) {
    HopRequest r(HopCollective::reduce_scatter, count, static_cast<std::size_t>(dsize));
    r.chunk_bytes = p.hop_chunk_bytes;
    const HopPlan plan(hops, r);
    double largest = 0, in_flight = 0;
    for (std::size_t st = 0; st < plan.num_stages(); ++st) {
      const HopStage& call = plan.stage(st, 0);
      if (!call.transfer) continue;
      const int f = plan.hops()[call.hop].fanout;
      const double copies = f > 2 ? 2 : f == 2 ? 1 : 0;
      const double send = copies * static_cast<double>(call.peer_bytes()) * f;
      largest = std::max(largest, send), in_flight += send;
    }
    total += plan.pipelined() ? in_flight : largest;
  }
  return total;
}

// tierzero's engine: what ShardedTrainer allocates (its memory_bytes()), from the same layouts and the same sizing
// rules (plan/engine_buffers.h): the states; the fetcher's ring (a gathered unit in the working dtype and its fp32
// copy per slot); the reducer's two send and two receive buckets; the fp32 gradient of one unit; a tied head's whole
// embedding and its gradient (fp32); the gathers of units rebuilt after the update; the model's activations
// (GptModel, gpt_activation_elements).
Parts tierzero_parts(const SimInput& in, const Topology& topo, const GptLayout& layout, int seq_len, SimResult& r, double& library) {
  const Plan& p = in.plan;
  const double dsize = static_cast<double>(dtype_size(in.dtype));
  const StateLayouts states = StateLayouts::make(layout, topo, p, 0);
  const bool params_off = p.param_offload.offloaded();
  double slots = 0;
  for (const FetchSlotSize& s : fetch_slot_sizes(layout, states, p.prefetch))
    slots += static_cast<double>(s.gathered) * dsize + static_cast<double>(s.compute) * sizeof(float);
  const std::vector<GradBucket> buckets = grad_buckets(layout.reduce_order(), states.grads, static_cast<std::size_t>(dsize), p.bucket_bytes);
  double reducer = 0;
  for (const std::size_t count : bucket_buffer_counts(buckets)) reducer += static_cast<double>(count) * dsize * (states.grads.group_size + 1);
  double rebuilt_shard = 0, rebuilt_padded = 0;
  for (std::size_t u = 0; u < layout.units().size(); ++u)
    if (p.rebuilt_after_update(layout.units()[u].numel))
      rebuilt_shard = std::max(rebuilt_shard, static_cast<double>(states.optim.shard[u])),
      rebuilt_padded = std::max(rebuilt_padded, static_cast<double>(states.optim.shard[u] * states.optim.group_size));
  const double unit_grad = static_cast<double>(unit_grad_elements(layout, in.model.tied)) * sizeof(float);
  const double buffers = slots + reducer + unit_grad + (rebuilt_shard + rebuilt_padded) * dsize +
                         comm_scratch(p, topo, layout, states, static_cast<std::size_t>(dsize), buckets);
  const double embed = in.model.tied ? 2.0 * sizeof(float) * static_cast<double>(layout.units()[layout.embed_unit()].numel) : 0.0;
  const int tp = in.mesh.tp;
  const double acts = sizeof(float) * static_cast<double>(gpt_activation_elements(in.model, in.micro_batch, seq_len, in.recompute.any(),
                                                                                  ops::attention_scratch(seq_len, in.model.heads / tp), tp,
                                                                                  in.mesh.sp));
  offloaded(p, states, dsize, r);
  library = in.system.device.sm_count == 0 ? mpi_reduce_temporaries(p, topo, buckets, dsize) : 0.0;
  return {{"params", params_off ? 0.0 : static_cast<double>(states.params_bytes(in.dtype))},
          {"bwd_params", params_off ? 0.0 : static_cast<double>(states.bwd_params_bytes(in.dtype))},
          {"grads", static_cast<double>(states.grads_bytes())},
          {"optim", p.optim_offload.offloaded() ? 0.0 : static_cast<double>(states.optim_bytes())},
          {"gathered", buffers + embed},
          {"activations", acts},
          {"logits", 0.0}};
}

// Another engine: its bytes per parameter of each state, divided as the plan partitions it (gradients a replicated
// plan accumulates locally stay whole); the units gathered at once and, for FSDP, the root unit; the activations the
// blocks keep (recomputation keeps each recomputed block's input only, and one block's set while it recomputes);
// the loss's logits at the head's backward, when every activation is still held.
Parts engine_parts(const SimInput& in, const Topology& topo, const GptLayout& layout, int seq_len, SimResult& r) {
  const Plan& p = in.plan;
  const EngineProfile& e = in.engine;
  const GptConfig& m = in.model;
  const double n = static_cast<double>(layout.num_params());
  const auto group = [&](const Partition& part) { return static_cast<double>(partition_group_size(topo, part)); };
  const bool whole_grads = e.accumulate_locally && !p.params;
  const double params = p.param_offload.offloaded() ? 0.0 : e.state_bytes.params * n / group(p.params);
  const double grad_bytes = e.grads_in_reduce_dtype && e.reduce_bytes > 0 ? e.reduce_bytes : e.state_bytes.grads;
  const double grads = grad_bytes * n / (whole_grads ? 1.0 : group(p.grads));
  const double optim = p.optim_offload.offloaded() ? 0.0 : e.state_bytes.optim * n / group(p.optim);
  const StateLayouts states = StateLayouts::make(layout, topo, p, 0);
  offloaded(p, states, static_cast<double>(dtype_size(in.dtype)), r);
  const double working = 2;  // 16-bit gathered parameters
  double gathered = 0;
  if (p.params) {
    // live_units blocks gathered at once and the one's gradient being reduced; the embedding and head, gathered for
    // the whole step where the engine's root unit keeps them, else in turn like the blocks.
    const double root = static_cast<double>(layout.units()[layout.embed_unit()].numel + (m.tied ? 0 : layout.units()[layout.head_unit()].numel));
    const double block_unit = static_cast<double>(layout.units()[layout.block_unit(0)].numel);
    gathered = block_unit * (e.live_units * working + std::max(e.reduce_bytes, 2)) +
               (e.root_gathered ? working * root : std::max(0.0, (root - block_unit)) * (working + std::max(e.reduce_bytes, 2)));
  } else if (e.state_bytes.params > working) {
    gathered = working * n;  // the 16-bit copy of fp32 replicated parameters the step computes with
  }
  const double tokens = static_cast<double>(in.micro_batch) * seq_len / in.context.degree, a = e.activation_bytes;  // a member's
  const SavedActivations acts = saved_activations(m, in.micro_batch, seq_len, op_options(in));
  const double saved = acts.saved, recomputing = acts.recomputing;
  // fp32 log-softmax and its gradient, of a tensor-parallel member's vocabulary columns (none on a pipeline's interior stage)
  const double logits =
      in.pipeline.priced_stage == 0 ? tokens * std::ceil(static_cast<double>(m.vocab) / in.mesh.tp) * (e.fused_loss ? a : 8.0) : 0.0;
  return {{"params", params}, {"bwd_params", 0.0}, {"grads", grads}, {"optim", optim}, {"gathered", gathered},
          {"activations", saved + recomputing}, {"logits", std::max(logits - recomputing, 0.0)}};
}
}  // namespace

double block_activation_bytes_per_token(const GptConfig& m, int seq_len, int activation_bytes, bool eager_attention, const ModelCode& code,
                                        int tp, bool sp) {
  OpOptions o;
  o.attention = eager_attention ? "eager" : "flash2", o.activation_bytes = activation_bytes, o.code = code, o.tp = tp, o.sp = sp;
  return block_saved_bytes(m, 1, seq_len, o) / seq_len;
}

namespace {
// The largest allocation the step repeats for every block (SimResult::largest_allocation).
double largest_allocation(const SimInput& in, const GptLayout& layout, int seq_len) {
  const EngineProfile& e = in.engine;
  const double tokens = static_cast<double>(in.micro_batch) * seq_len / in.context.degree;
  const double block_unit = static_cast<double>(layout.units()[layout.block_unit(0)].numel);
  const double gathered = in.plan.params ? block_unit * std::max(2, e.reduce_bytes) : 0.0;  // 16-bit weights; the gradient as reduced
  const double hidden = tokens * in.model.ffn_size() * e.activation_bytes;
  return std::max(gathered, hidden);
}
}  // namespace

void memory_per_rank(const SimInput& in, const Topology& topo, const GptLayout& layout, int seq_len, SimResult& r) {
  double library = 0;  // the communication library's own allocations
  Parts parts = in.engine.memory == MemoryMethod::allocations ? tierzero_parts(in, topo, layout, seq_len, r, library)
                                                               : engine_parts(in, topo, layout, seq_len, r);
  double allocated = 0;
  for (const auto& [k, v] : parts) allocated += v;
  parts.emplace_back("runtime", allocated * in.engine.allocator_reserve + in.engine.fixed_bytes + in.system.device.runtime_bytes + library);
  r.memory_bytes = std::move(parts);
  r.memory_total = 0;
  for (const auto& [k, v] : r.memory_bytes) r.memory_total += v;
  r.largest_allocation = largest_allocation(in, layout, seq_len);
  r.judge_memory(in.system.memory_bytes, in.engine);
}

void SimResult::judge_memory(double capacity, const EngineProfile& e) {
  fits = memory_total <= capacity;
  at_memory_limit = fits && e.allocator_reserve > 0 && capacity - memory_total < largest_allocation;
}

}  // namespace tierzero
