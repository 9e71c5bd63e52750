// Internal state shared by the hierarchical algorithms: the memory the
// buffers live in and the element work on it, the hop communicators (fan-out > 1 only, innermost
// first) and scratch buffers in that memory (Scratch) that grow to the
// largest size asked for and are then reused. Algorithms reach a hop's communicator through hop(),
// which first fences the executor's pending memory work (core/memory.h) and
// puts the executor's clock (comm/exec_clock.h) in the hop's level phase for
// the call; quantisation runs under a QuantPhase.
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "quant/element_ops.h"
#include "comm/exec_clock.h"
#include "comm/hier/hierarchy.h"
#include "core/memory.h"

namespace tierzero {

// The scratch buffers by use. The quantised all-gather and reduce-scatter
// share two (they never run at once on one HopState); the quantised
// all-gather also runs the plain one on packed bytes.
enum class Scratch : int {
  plain_even = 0, plain_odd = 1,        // the plain algorithms, alternately hop by hop (plain_scratch)
  packed_shard = 2, packed_bundle = 3,  // quantised all-gather: this rank's packed shard, every rank's
  f32_input = 2, f32_sum = 3,           // quantised reduce-scatter: the input in fp32, the running sum
  hop_send = 4, hop_recv = 5,           // quantised reduce-scatter: one hop's all-to-all
};
inline constexpr int kNumScratch = 6;
inline Scratch plain_scratch(std::size_t hop) { return hop % 2 ? Scratch::plain_odd : Scratch::plain_even; }

struct HopState {
  std::vector<std::vector<Level>> levels;            // levels of each hop, innermost first
  std::vector<std::unique_ptr<Communicator>> hops;   // hops[i] spans levels[i]
  Memory* mem = nullptr;
  ElementOps* ops = nullptr;  // the element work on mem's buffers
  MemArray<std::byte> scratch[kNumScratch];
  int group_size = 1;
  ExecClock* clock = nullptr;  // the executor's (null: not timed)

  std::byte* buffer(Scratch which, std::size_t bytes);
  std::size_t scratch_bytes() const;  // what the buffers have grown to (scratch_sizes.h computes it beforehand)
  int fanout(std::size_t i) const { return hops[i]->size(); }

  // A collective on one hop, timed as the outermost level its members span
  // until the end of the full expression: s.hop(h)->all_gather(...).
  class HopCall {
   public:
    HopCall(Communicator& c, ExecClock* clock) : comm_(c), clock_(clock) {
      if (clock_) clock_->enter(collective_phase(c));
    }
    ~HopCall() {
      if (clock_) clock_->enter(phase_index(CommPhase::local));
    }
    HopCall(const HopCall&) = delete;
    HopCall& operator=(const HopCall&) = delete;
    Communicator* operator->() const { return &comm_; }

   private:
    Communicator& comm_;
    ExecClock* clock_;
  };
  // Hop i's communicator, once this thread's memory work has finished.
  HopCall hop(std::size_t i) {
    mem->fence();
    return HopCall(*hops[i], clock);
  }
};

// Quantisation work on the executor, timed as such while this lives.
class QuantPhase {
 public:
  explicit QuantPhase(const HopState& s) : clock_(s.clock) {
    if (clock_) clock_->enter(phase_index(CommPhase::quant));
  }
  ~QuantPhase() {
    if (clock_) clock_->enter(phase_index(CommPhase::local));
  }
  QuantPhase(const QuantPhase&) = delete;
  QuantPhase& operator=(const QuantPhase&) = delete;

 private:
  ExecClock* clock_;
};

// Extents of up to three axes.
struct Dims {
  std::array<int, kNumLevels> d{};
  std::size_t k = 0;
};

// dst = src with its axes in reverse order. src is a row-major array of
// blocks with extents dims[0] (major) .. dims[k-1] (minor), each block
// `block` bytes; dst has extents dims[k-1] (major) .. dims[0] (minor).
// One mem.copy per block.
void reverse_axes(Memory& mem, const std::byte* src, std::byte* dst, const Dims& dims, std::size_t block);
// The hop fan-outs, innermost first, or outermost first.
Dims inner_first(const HopState& s);
Dims outer_first(const HopState& s);

void hier_all_gather(HopState& s, const void* send, void* recv, std::size_t count, DType t);
void hier_reduce_scatter(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op);
void hier_all_reduce(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op);
void hier_quant_all_gather(HopState& s, const void* send, void* recv, std::size_t count, DType t, const QuantSpec& q);
void hier_quant_reduce_scatter(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                               const HopBits& bits, const QuantSpec& q);

}  // namespace tierzero
