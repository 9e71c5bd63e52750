// Hierarchical collectives over the levels of a world communicator's
// topology (docs/algorithms.md). They return exactly what the flat
// collectives return: all-gather bit for bit; reductions equal up to the
// order of floating-point additions. Each algorithm runs one step per level
// with fan-out > 1 on that level's hop group:
//   all_gather      world -> node -> gpu (the network carries each shard once)
//   reduce_scatter  gpu -> node -> world (each hop shrinks the data)
//   all_reduce      reduce_scatter gpu->world, then all_gather world->gpu
//
// Ownership: borrows the world communicator, which must outlive it, and owns
// the hop communicators, scratch buffers (grown on first use, then reused)
// and one worker thread. Threading: all calls, blocking or not, run in
// submission order on the worker; call from one thread at a time.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "tierzero/communicator.h"

namespace tierzero {

struct HopState;
class CommThread;

class Hierarchy {
 public:
  // Collective over `world`: creates the hop communicators.
  explicit Hierarchy(Communicator& world);
  ~Hierarchy();
  Hierarchy(const Hierarchy&) = delete;
  Hierarchy& operator=(const Hierarchy&) = delete;

  Communicator& world() const { return world_; }
  // Levels with fan-out > 1, innermost first.
  const std::vector<Level>& hop_levels() const;
  Communicator& hop(Level level) const;

  // Same contracts as Communicator's collectives of the same name.
  Request iall_gather(const void* send, void* recv, std::size_t count, DType t);
  Request ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op);
  Request iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op);
  void all_gather(const void* send, void* recv, std::size_t count, DType t) { iall_gather(send, recv, count, t).wait(); }
  void reduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
    ireduce_scatter(send, recv, count, t, op).wait();
  }
  void all_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
    iall_reduce(send, recv, count, t, op).wait();
  }

 private:
  Communicator& world_;
  std::unique_ptr<HopState> state_;
  std::unique_ptr<CommThread> thread_;
};

}  // namespace tierzero
