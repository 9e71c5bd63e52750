// The scratch a Hierarchy's algorithms ask their HopState for (hop_plan.h's
// Scratch buffers), computed without running them: each call builds the
// plan its algorithm runs (HopPlan) and keeps the largest size per buffer,
// as HopState::buffer grows them. What the simulator's memory model
// counts for tierzero's engine; tests/engine_mpi_test.cc checks it against
// Hierarchy::scratch_bytes() after real steps. Value type.
#pragma once
#include <array>
#include <cstddef>
#include <vector>

#include "comm/hier/hop_plan.h"
#include "quant/quant.h"
#include "tierzero/topology.h"

namespace tierzero {

class ScratchSizes {
 public:
  // The hops of a Hierarchy over a group with topology `group` split by
  // `spec` (the hops of fan-out 1 dropped, as the Hierarchy drops them),
  // with its chunk size (Hierarchy::set_chunk_bytes).
  ScratchSizes(const Topology& group, const HopSpec& spec, std::size_t chunk_bytes = 0);

  void all_gather(std::size_t count, std::size_t esize);
  void reduce_scatter(std::size_t count, std::size_t esize);
  void all_reduce(std::size_t count, std::size_t esize);
  void all_gather_quantized(std::size_t count, std::size_t esize, const QuantSpec& q);
  void reduce_scatter_quantized(std::size_t count, std::size_t esize, const HopBits& bits, const QuantSpec& q);
  std::size_t total() const;

 private:
  void need(const HopRequest& r);
  std::vector<HopGroup> hops_;  // innermost first
  std::size_t chunk_bytes_ = 0;
  std::array<std::size_t, kNumScratch> bytes_{};
};

}  // namespace tierzero
