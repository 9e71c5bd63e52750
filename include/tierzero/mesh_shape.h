// The shape of a job's tensor-parallel x data-parallel mesh
// (tierzero/mesh.h), without communicators: its arithmetic on topologies,
// in the topology layer, so that the simulator and what reads a saved mesh
// (checkpoints) need no communicator.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "tierzero/topology.h"

namespace tierzero {

// The mesh's shape, without communicators: what the simulator takes. Value type.
struct MeshShape {
  int tp = 1;                     // the tensor-parallel degree
  std::optional<Level> tp_level;  // the level its groups lie in; none: the topology's innermost declared level
  // Sequence parallelism between the tensor-parallel regions (model/gpt.h;
  // docs/parallelism.md): only at tp > 1, with tp dividing the sequence length.
  bool sp = false;
  // The tensor level in `world`.
  Level level(const Topology& world) const;
  // The topology the data-parallel states are laid out over: at tp = 1 the
  // world's. Throws ConfigError naming the values when tp < 1, when
  // tp_level is a level `world` does not declare, when tp does not divide
  // that level's fan-out.
  Topology data_topology(const Topology& world) const;
  // World rank `rank`'s member index in its tensor-parallel group (its tensor-level coordinate modulo tp).
  int tp_rank(const Topology& world, int rank) const { return world.coord(rank, level(world)) % tp; }
  // The world ranks of `rank`'s tensor-parallel group, in member order: the
  // ranks whose coordinates equal its own but on the tensor level, within
  // its run of tp there.
  std::vector<int> tensor_group(const Topology& world, int rank) const;
  // Throws ConfigError naming the values when sp is set at tp = 1 or tp does not divide `seq_len`.
  void check_sp(int seq_len) const;
  bool operator==(const MeshShape&) const = default;
};

// `world` with level `l`'s fan-out divided by `degree`: groups of `degree`
// ranks on that level factored out (a tensor group, a pipeline's stages).
// Throws ConfigError naming `degree_name` ("tp = 3") and `level_key`
// ("tp_level") when `l` is a level `world` does not declare or `degree`
// does not divide its fan-out.
Topology factor_level(const Topology& world, Level l, int degree, const std::string& degree_name, const std::string& level_key);

}  // namespace tierzero
