// Hierarchical collectives over the levels of a world communicator's
// topology (docs/algorithms.md). They return exactly what the flat
// collectives return: all-gather bit for bit; reductions equal up to the
// order of floating-point additions. Each algorithm runs one step per level
// with fan-out > 1 on that level's hop group:
//   all_gather      world -> node -> package (the network carries each shard once)
//   reduce_scatter  package -> node -> world (each hop shrinks the data)
//   all_reduce      reduce_scatter package->world, then all_gather world->package
// and the quantised ones of ZeRO++, generalised to any number of levels:
//   all_gather_quantized (qwZ)      each shard quantised once by its owner,
//                                   packed shards gathered world -> package,
//                                   every shard dequantised by the receiver
//   reduce_scatter_quantized (qgZ)  per hop, innermost first: quantise the
//                                   piece for each peer, all-to-all,
//                                   dequantise and sum in fp32
// A NaN/Inf in the input travels as a bad block (quant/quant.h) and
// comes out as NaN, so a caller's finiteness check on the result sees it.
//
// Ownership: borrows the communicator, which must outlive it, and owns the
// hop communicators and scratch buffers (in the given Memory, grown on
// first use, then reused: no allocation in steady state). Every call,
// blocking or not, is a job of a CommSchedule (comm/comm_schedule.h):
// the one given, shared with the rest of the rank's collectives so that
// all of them are issued in one order, or one of its own.
// Threading: call from one thread at a time. Buffers passed in live in that
// Memory; each call marks the calling thread's memory work and the
// executor waits for the mark (core/memory.h), so what the caller wrote
// is what gets sent, without blocking the caller.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <memory>
#include <vector>

#include "comm/comm_schedule.h"
#include "tierzero/communicator.h"
#include "quant/element_ops.h"
#include "tierzero/topology.h"
#include "core/memory.h"

namespace tierzero {

struct HopState;

class Hierarchy {
 public:
  // Collective over `comm` (the world, or any group split from it): creates
  // one communicator per hop of `hops` that has more than one member within
  // `comm`. `comm`, `mem`, `ops` and `schedule` must outlive the
  // Hierarchy; the collectives' buffers live in `mem`, which must be
  // memory `comm` can reach, and `ops` works on them (quantisation, sums);
  // `schedule` issues them (nullptr: a schedule of its own).
  explicit Hierarchy(Communicator& comm, const HopSpec& hops = three_level_hops(), Memory& mem = host_memory(),
                     ElementOps& ops = host_element_ops(), CommSchedule* schedule = nullptr);
  ~Hierarchy();
  Hierarchy(const Hierarchy&) = delete;
  Hierarchy& operator=(const Hierarchy&) = delete;

  // The communicator the hierarchy spans (the world, or any group split from it).
  Communicator& group() const { return group_; }
  // Number of hops with more than one member.
  std::size_t num_hops() const;
  // The scratch buffers' bytes so far: they grow to the largest collective
  // issued (comm/hier/scratch_sizes.h gives the size a set of calls reaches).
  std::size_t scratch_bytes() const;
  // The communicator of the hop containing `level` (throws if none).
  Communicator& hop(Level level) const;
  // Pipelined hops (comm/hier/hop_plan.h): each rank's part of a collective
  // cut into chunks of `bytes` that flow through the hops as a pipeline, for
  // the collectives issued after this call (0, the default: whole, one hop
  // after the other). Results stay those of the whole collective. Call it
  // with none of this Hierarchy's collectives in flight.
  void set_chunk_bytes(std::size_t bytes);

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

  // qwZ: recv (size()*count, float type t) = every rank's shard after a
  // quantise/dequantise round trip with `q`.
  Request iall_gather_quantized(const void* send, void* recv, std::size_t count, DType t, const QuantSpec& q);
  // qgZ: recv (count) = sum/mean over all ranks of their chunk, with hop
  // `bits` per level and q's block size and mode. The result is in
  // exactly the place a plain reduce_scatter puts it.
  Request ireduce_scatter_quantized(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                                    const HopBits& bits, const QuantSpec& q);
  void all_gather_quantized(const void* send, void* recv, std::size_t count, DType t, const QuantSpec& q) {
    iall_gather_quantized(send, recv, count, t, q).wait();
  }
  void reduce_scatter_quantized(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                                const HopBits& bits, const QuantSpec& q) {
    ireduce_scatter_quantized(send, recv, count, t, op, bits, q).wait();
  }

 private:
  Request submit(CommJob job);
  Communicator& group_;
  std::unique_ptr<HopState> state_;
  std::unique_ptr<CommSchedule> own_schedule_;
  CommSchedule* schedule_;
};

}  // namespace tierzero
