#include "tierzero/mesh.h"

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
  TZ_CHECK(tp == 1, ConfigError, degree + ": tensor parallelism is not implemented yet (the model has no tensor-parallel layers); use tp = 1");
  return world;
}

Mesh::Mesh(Communicator& world, MeshShape shape)
    : world_(world), shape_(shape), tp_level_(shape.level(world.topology())), data_topology_(shape.data_topology(world.topology())),
      data_(&world) {
  TZ_CHECK(world.size() == world.topology().size(), TopologyError,
           "a mesh needs the job's whole world: the communicator has " + std::to_string(world.size()) + " ranks, its topology " +
               world.topology().to_string() + " " + std::to_string(world.topology().size()));
}

}  // namespace tierzero
