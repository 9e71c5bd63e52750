// The scratch a Hierarchy's algorithms ask their HopState for (hop_state.h's
// Scratch buffers), computed without running them: each call follows its
// algorithm's buffer requests (hier_*.cc) and keeps the largest size per
// buffer, as HopState::buffer grows them. What the simulator's memory model
// counts for tierzero's engine; tests/engine_mpi_test.cc checks it against
// Hierarchy::scratch_bytes() after real steps. Value type.
#pragma once
#include <array>
#include <cstddef>
#include <vector>

#include "comm/hier/hop_state.h"
#include "quant/quant.h"
#include "tierzero/topology.h"

namespace tierzero {

class ScratchSizes {
 public:
  // The hops of a Hierarchy over a group with topology `group` split by
  // `spec` (the hops of fan-out 1 dropped, as the Hierarchy drops them).
  ScratchSizes(const Topology& group, const HopSpec& spec);

  void all_gather(std::size_t count, std::size_t esize);
  void reduce_scatter(std::size_t count, std::size_t esize);
  void all_reduce(std::size_t count, std::size_t esize);
  void all_gather_quantized(std::size_t count, const QuantSpec& q);
  void reduce_scatter_quantized(std::size_t count, std::size_t esize, const HopBits& bits, const QuantSpec& q);
  std::size_t total() const;

 private:
  void need(Scratch which, std::size_t bytes);
  std::vector<std::vector<Level>> levels_;  // per hop, innermost first
  std::vector<std::size_t> fanout_;
  std::size_t group_ = 1;
  std::array<std::size_t, kNumScratch> bytes_{};
};

}  // namespace tierzero
