// A job as a mesh of tensor-parallel x data-parallel ranks
// (docs/architecture.md: the mesh). `tp` ranks of one level (the tensor
// level: the innermost declared level by default) form a tensor-parallel
// group, which will hold one copy of the model split across its members;
// the ranks that hold the same split form the data-parallel group, over
// which every plan (tierzero/plan.h) partitions its states, gathers and
// reduces. The engine and the simulator read the data-parallel side from
// here wherever they mean "the ranks sharing the batch and the states";
// what is truly job-wide (the control values every rank agrees on, the
// flight recorder, checkpoint files named by world rank) stays on the world.
//
// A tensor-parallel group is `tp` consecutive coordinates of the tensor
// level (the other coordinates equal); a rank's tensor-parallel rank is its
// coordinate there modulo tp, and the data-parallel group is the ranks of
// the same tensor-parallel rank. The data topology is the world's with the
// tensor level's fan-out divided by tp: its rank order is the data group's
// world-rank order, and the data communicator's split(level) and
// cross(level) (the world's groups intersected with its members) are that
// topology's groups.
//
// At tp = 1 the data-parallel group is the whole world (its communicator,
// topology, rank and size are the world's) and there is no tensor-parallel
// group: no communicator is created here, so a tp = 1 job's communicators,
// which the flight recorder numbers in creation order, are exactly a
// data-parallel job's. At tp > 1 the mesh splits the world twice, the data
// group first, then the tensor-parallel group (collective over the world).
#pragma once
#include <memory>
#include <optional>

#include "tierzero/communicator.h"
#include "tierzero/mesh_shape.h"
#include "tierzero/topology.h"

namespace tierzero {

// The mesh over a world communicator, for one rank. Holds references: the
// world must outlive it. Throws what MeshShape::data_topology throws, and
// TopologyError when the world communicator does not span its topology.
class Mesh {
 public:
  explicit Mesh(Communicator& world, MeshShape shape = {});
  ~Mesh();
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  // The job's whole world: job-wide agreement (control values), traffic, flight records.
  Communicator& world() const { return world_; }
  const MeshShape& shape() const { return shape_; }
  int tp() const { return shape_.tp; }
  Level tp_level() const { return tp_level_; }
  // The ranks that hold the same tensor-parallel split, ordered by world
  // rank (at tp = 1 the world itself); split(level) and cross(level) of it
  // intersect the topology's groups with its members.
  Communicator& data() const { return *data_; }
  // The layout of the data-parallel ranks (the states' partitions), and
  // this rank's number in it: its member index in data(), which orders
  // the batch's micro-batches.
  const Topology& data_topology() const { return data_topology_; }
  int data_rank() const { return data_->rank(); }
  int data_size() const { return data_->size(); }
  // This rank's member index in its tensor-parallel group (0 at tp = 1),
  // and the group, ordered by world rank (null at tp = 1).
  int tp_rank() const { return tp_rank_; }
  Communicator* tensor() const { return tensor_.get(); }

 private:
  Communicator& world_;
  MeshShape shape_;
  Level tp_level_;
  Topology data_topology_;
  int tp_rank_ = 0;
  std::unique_ptr<Communicator> own_data_, tensor_;
  Communicator* data_;
};

}  // namespace tierzero
