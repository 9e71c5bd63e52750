#include "sim/tensor_traffic.h"

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

std::vector<HopTransfer> tensor_transfers(const SimInput& in, const Topology& world, int me, int seq_len) {
  std::vector<HopTransfer> out;
  if (in.mesh.tp == 1) return out;
  const std::vector<int> members = in.mesh.tensor_group(world, me);
  const std::size_t n = static_cast<std::size_t>(in.micro_batch) * static_cast<std::size_t>(seq_len) * static_cast<std::size_t>(in.model.channels);
  const auto esize = static_cast<std::size_t>(in.engine.activation_bytes);
  const double per_micro = 4.0 * in.model.layers + 2 * blocks_recomputed_with_collectives(in.model, in.recompute);
  const auto calls = static_cast<long>(per_micro * in.grad_accum);
  for (long i = 0; i < calls; ++i) flat_all_reduce(out, Phase::tensor, world, members, me, n, esize);
  return out;
}

}  // namespace tierzero
