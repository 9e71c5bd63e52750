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
  const Level level = in.mesh.level(world);
  // The group: the ranks whose coordinates equal mine but on the tensor level, within my run of tp there.
  std::array<int, kNumLevels> c{};
  for (int i = 0; i < kNumLevels; ++i) c[i] = world.coord(me, static_cast<Level>(i));
  const int first = c[static_cast<int>(level)] - c[static_cast<int>(level)] % in.mesh.tp;
  std::vector<int> members;
  for (int i = 0; i < in.mesh.tp; ++i) {
    c[static_cast<int>(level)] = first + i;
    members.push_back(world.rank_of(c));
  }
  const std::size_t n = static_cast<std::size_t>(in.micro_batch) * static_cast<std::size_t>(seq_len) * static_cast<std::size_t>(in.model.channels);
  const auto esize = static_cast<std::size_t>(in.engine.activation_bytes);
  const double per_micro = 4.0 * in.model.layers + 2 * blocks_recomputed_with_collectives(in.model, in.recompute);
  const auto calls = static_cast<long>(per_micro * in.grad_accum);
  for (long i = 0; i < calls; ++i) flat_all_reduce(out, Phase::tensor, world, members, me, n, esize);
  return out;
}

}  // namespace tierzero
