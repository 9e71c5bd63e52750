#include "tierzero/mesh.h"

#include <array>
#include <string>

#include "tierzero/error.h"

namespace tierzero {

Level MeshShape::level(const Topology& world) const { return tp_level ? *tp_level : world.levels().front(); }

Topology MeshShape::data_topology(const Topology& world) const {
  const std::string degree = "tp = " + std::to_string(tp);
  TZ_CHECK(tp >= 1, ConfigError, degree + ": the tensor-parallel degree must be at least 1");
  const Level l = level(world);
  TZ_CHECK(world.declares(l), ConfigError,
           "tp_level " + std::string(level_name(l)) + ": the job's topology " + world.to_string() + " has no such level");
  TZ_CHECK(world.fanout(l) % tp == 0, ConfigError,
           degree + " does not divide the " + std::string(level_name(l)) + " level's fan-out " + std::to_string(world.fanout(l)) +
               " (topology " + world.to_string() + ")");
  std::array<int, kNumLevels> fanout{};
  for (int i = 0; i < kNumLevels; ++i) fanout[i] = world.fanout(static_cast<Level>(i));
  fanout[static_cast<int>(l)] /= tp;
  return Topology(fanout, world.levels());
}

Mesh::Mesh(Communicator& world, MeshShape shape)
    : world_(world), shape_(shape), tp_level_(shape.level(world.topology())), data_topology_(shape.data_topology(world.topology())),
      data_(&world) {
  const Topology& topo = world.topology();
  TZ_CHECK(world.size() == topo.size(), TopologyError,
           "a mesh needs the job's whole world: the communicator has " + std::to_string(world.size()) + " ranks, its topology " +
               topo.to_string() + " " + std::to_string(topo.size()));
  if (shape_.tp == 1) return;
  const int me = world.world_rank(world.rank()), at = topo.coord(me, tp_level_);
  tp_rank_ = at % shape_.tp;
  own_data_ = world.split_by(tp_rank_);
  data_ = own_data_.get();
  std::array<int, kNumLevels> first{};  // the group's first member: the same coordinates, the tensor level's rounded down
  for (int i = 0; i < kNumLevels; ++i) first[i] = topo.coord(me, static_cast<Level>(i));
  first[static_cast<int>(tp_level_)] = at - tp_rank_;
  tensor_ = world.split_by(topo.rank_of(first));
}

Mesh::~Mesh() = default;

}  // namespace tierzero
