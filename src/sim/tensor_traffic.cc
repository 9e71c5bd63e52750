#include "sim/tensor_traffic.h"

#include <algorithm>

#include "sim/compute_model.h"
#include "sim/hop_time.h"

namespace tierzero {

double blocks_recomputed_with_collectives(const GptConfig& model, const Recompute& r) {
  switch (r.kind) {
    case Recompute::Kind::full: return model.layers;
    case Recompute::Kind::every: return static_cast<double>(model.layers / r.every);
    case Recompute::Kind::selective:
    case Recompute::Kind::ops:
    case Recompute::Kind::none: break;
  }
  return 0;
}

namespace {
// A flat all-gather or reduce-scatter over `members` with `n` elements per member, as the communicators count it:
// `me` receives n from each peer.
void flat_from_each(std::vector<HopTransfer>& out, Collective k, const Topology& t, const std::vector<int>& members, int me, std::size_t n,
                    std::size_t esize) {
  HopTransfer x{Phase::tensor, k, static_cast<int>(members.size()), {}, 0, -1};
  for (const int peer : members)
    if (peer != me) x.bytes[static_cast<int>(t.separating_level(me, peer))] += n * esize;
  out.push_back(x);
}
}  // namespace

std::vector<HopTransfer> tensor_transfers(const SimInput& in, const Topology& world, int me, int seq_len) {
  std::vector<HopTransfer> out;
  if (in.mesh.tp == 1) return out;
  const std::vector<int> members = in.mesh.tensor_group(world, me);
  const std::size_t C = static_cast<std::size_t>(in.model.channels), tokens = static_cast<std::size_t>(in.micro_batch) * static_cast<std::size_t>(seq_len);
  const std::size_t n = tokens * C;
  const auto esize = static_cast<std::size_t>(in.engine.activation_bytes);
  const double recomputed = blocks_recomputed_with_collectives(in.model, in.recompute);
  // Shared key/value heads: each block's backward sums every head's key and value gradients, once per micro-batch.
  const std::size_t kv = tp_kv_grad_elements(in.model, in.mesh.tp);
  for (long i = 0; kv > 0 && i < static_cast<long>(in.model.layers) * in.grad_accum; ++i)
    flat_all_reduce(out, Phase::tensor, world, members, me, kv, esize);
  // The vocabulary-parallel loss, per micro-batch: the rows' maxima gathered, the sums of exp and the targets' logits
  // (2 per row) summed, in fp32.
  const auto loss_statistics = [&] {
    flat_from_each(out, Collective::all_gather, world, members, me, tokens, sizeof(float));
    flat_all_reduce(out, Phase::tensor, world, members, me, 2 * tokens, sizeof(float));
  };
  // A pipeline's interior stage has no embedding, head or loss (sim/pipeline.h): none of their collectives.
  const bool vocabulary = in.pipeline.priced_stage == 0;
  const int ends = vocabulary ? 2 : 0;
  if (!in.mesh.sp) {
    // Per micro-batch: each block's two sums in forward (again where recomputed) and two in backward; the
    // vocabulary-parallel embedding's lookup and the head's input gradient.
    const auto calls = static_cast<long>(4.0 * in.model.layers + 2 * recomputed + ends);
    for (int micro = 0; micro < in.grad_accum; ++micro) {
      for (long i = 0; i < calls; ++i) flat_all_reduce(out, Phase::tensor, world, members, me, n, esize);
      if (vocabulary) loss_statistics();
    }
    return out;
  }
  // Sequence parallel, per micro-batch: each block's forward (and its recomputation) gathers the two norms' outputs and
  // reduce-scatters the two projections' sums; its backward gathers the two outputs' gradients and the two saved norm
  // outputs and reduce-scatters the two inputs' gradients; the embedding's lookup and the head's input gradient are
  // reduce-scattered, the final norm's output is gathered for the head, the stream's gradient for the embedding's;
  // the norms' weight gradients are summed, each block's and the final one's.
  const std::size_t piece = n / static_cast<std::size_t>(in.mesh.tp);
  const std::size_t norm_params = in.model.norm == Norm::layernorm ? 2 * C : C;
  const double L = in.model.layers;
  const auto gathers = static_cast<long>(6 * L + 2 * recomputed + ends), scatters = static_cast<long>(4 * L + 2 * recomputed + ends);
  for (int micro = 0; micro < in.grad_accum; ++micro) {
    if (vocabulary) loss_statistics();
    for (long i = 0; i < gathers; ++i) flat_from_each(out, Collective::all_gather, world, members, me, piece, esize);
    for (long i = 0; i < scatters; ++i) flat_from_each(out, Collective::reduce_scatter, world, members, me, piece, esize);
    for (int l = 0; l < in.model.layers; ++l) flat_all_reduce(out, Phase::tensor, world, members, me, 2 * norm_params, esize);
    if (vocabulary) flat_all_reduce(out, Phase::tensor, world, members, me, norm_params, esize);
  }
  return out;
}

double tensor_overlap_hidden(const SimInput& in, const Topology& world, int seq_len, const std::vector<Op>& ops) {
  if (in.mesh.tp == 1 || !in.engine.tensor_overlap) return 0;
  const std::vector<int> members = in.mesh.tensor_group(world, 0);
  const std::size_t n = static_cast<std::size_t>(in.micro_batch) * static_cast<std::size_t>(seq_len) * static_cast<std::size_t>(in.model.channels);
  const auto esize = static_cast<std::size_t>(in.engine.activation_bytes);
  const auto seconds = [&](const std::vector<HopTransfer>& one) {  // one collective, as tensor_transfers counts it
    double c = 0;
    for (const HopTransfer& h : one) {
      const HopTime t = hop_time(h, world, in.system);
      c += t.transfer_s + t.latency_s + in.system.call_overhead_s;
    }
    return c;
  };
  std::vector<HopTransfer> scatter, gather;
  if (in.mesh.sp) {
    const std::size_t piece = n / static_cast<std::size_t>(in.mesh.tp);
    flat_from_each(scatter, Collective::reduce_scatter, world, members, 0, piece, esize);
    flat_from_each(gather, Collective::all_gather, world, members, 0, piece, esize);
  } else {
    flat_all_reduce(scatter, Phase::tensor, world, members, 0, n, esize);
  }
  const double reduce_s = seconds(scatter), gather_s = in.mesh.sp ? seconds(gather) : 0.0;
  const bool all = in.mesh.sp && in.engine.tp_comm_overlap;
  // Per GEMM, the collective hidden under it: the input gradients' sums under the weight gradients, and with sequence
  // parallelism the saved inputs' gathers under the input gradients (always); with userbuffers, the rest of the
  // block's as the contract above lists them.
  const auto beside = [&](const std::string& name) {
    if (name == "qkv_wgrad" || name == "fc_wgrad" || name == "gate_up_wgrad") return reduce_s;
    if (name == "qkv_dgrad" || name == "fc_dgrad" || name == "gate_up_dgrad") return gather_s;
    if (!all) return 0.0;
    if (name == "proj" || name == "fc_proj") return reduce_s;
    if (name == "qkv" || name == "fc" || name == "gate_up" || name == "proj_dgrad" || name == "fc_proj_dgrad") return gather_s;
    return 0.0;
  };
  double hidden = 0;  // per micro-batch
  for (const Op& op : ops)
    if (op.kind == OpKind::gemm)
      if (const double c = beside(op.name); c > 0) hidden += op.count * std::min(c, op_time(op, in.system, in.engine) / op.count);
  return hidden * in.grad_accum;
}

}  // namespace tierzero
