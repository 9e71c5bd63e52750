#include "tierzero/mesh.h"

#include <string>

#include "tierzero/error.h"

namespace tierzero {

Mesh::Mesh(Communicator& world, MeshShape shape)
    : world_(world), shape_(shape), tp_level_(shape.level(world.topology())), data_topology_(shape.data_topology(world.topology())),
      data_(&world) {
  const Topology& topo = world.topology();
  TZ_CHECK(world.size() == topo.size(), TopologyError,
           "a mesh needs the job's whole world: the communicator has " + std::to_string(world.size()) + " ranks, its topology " +
               topo.to_string() + " " + std::to_string(topo.size()));
  if (shape_.tp == 1) return;
  const int me = world.world_rank(world.rank());
  tp_rank_ = shape_.tp_rank(topo, me);
  own_data_ = world.split_by(tp_rank_);
  data_ = own_data_.get();
  tensor_ = world.split_by(shape_.tensor_group(topo, me).front());
}

Mesh::~Mesh() = default;

}  // namespace tierzero
