// Internal state shared by the hierarchical algorithms: the memory the
// buffers live in and the element work on it, the hop communicators (fan-out > 1 only, innermost
// first), the plans of the collectives asked of them (hop_plan.h, each built
// once) and scratch buffers in that memory (Scratch) that grow to the
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
#include "comm/hier/hop_plan.h"
#include "core/memory.h"

namespace tierzero {

struct HopState {
  std::vector<HopGroup> groups;                      // each hop's levels and members, innermost first
  std::vector<std::unique_ptr<Communicator>> hops;   // hops[i] spans groups[i]
  Memory* mem = nullptr;
  ElementOps* ops = nullptr;  // the element work on mem's buffers
  MemArray<std::byte> scratch[kNumScratch];  // by Scratch, then the pipe buffers
  int group_size = 1;
  std::size_t chunk_bytes = 0;  // HopRequest::chunk_bytes of the plain and quantised all-gathers and reduce-scatters
  ExecClock* clock = nullptr;  // the executor's (null: not timed)
  std::vector<std::unique_ptr<HopPlan>> plans;  // built so far

  std::byte* buffer(Scratch which, std::size_t bytes);
  // The plan of `r` over these hops (with this state's chunk size), built on first use.
  const HopPlan& plan(HopRequest r);
  // Grows the scratch buffers to what `p` needs, before any of its stages runs.
  void reserve(const HopPlan& p);
  // Stage st's output buffer for chunk c (reserved).
  std::byte* out(const HopPlan& p, std::size_t st, std::size_t c) {
    return scratch[p.stage(st, c).out[p.pipelined() ? c % 2 : 0]].data();
  }
  std::size_t scratch_bytes() const;  // what the buffers have grown to (scratch_sizes.h computes it beforehand)
  int fanout(std::size_t i) const { return hops[i]->size(); }

  // A collective on one hop, timed as the outermost level its members span
  // until the end of the full expression: s.hop(h)->iall_gather(...) times
  // the posting (run_pipeline times the wait, as its wave's outermost hop).
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
    Communicator& operator*() const { return comm_; }

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

// Posts transfer stage st of chunk c of `p` on its hop: from `from` into
// the stage's buffer, or into `caller` where the plan names none, with the
// flight record's bits set to the stage's. Reductions apply `op` (a hop of
// a longer walk sums; one hop alone does the whole call's reduction).
Request issue_stage(HopState& s, const HopPlan& p, std::size_t st, std::size_t c, const void* from, void* caller,
                    DType t, ReduceOp op = ReduceOp::sum);
// Posts transfer stage `g` on communicator `hop` (its hop's), from `from` into `to`.
Request issue_transfer(Communicator& hop, const HopStage& g, const void* from, void* to, DType t, ReduceOp op = ReduceOp::sum);

// Extents of up to three axes.
struct Dims {
  std::array<int, kNumLevels> d{};
  std::size_t k = 0;
};

// dst = src with its axes in reverse order. src is a row-major array of
// blocks with extents dims[0] (major) .. dims[k-1] (minor), each block
// `block` bytes, `src_pitch` bytes apart; dst has extents dims[k-1] (major)
// .. dims[0] (minor), its blocks `dst_pitch` bytes apart (a chunk of each
// rank's part: the pitch is the part, the block the chunk). One mem.copy per block.
void reverse_axes(Memory& mem, const std::byte* src, std::size_t src_pitch, std::byte* dst, std::size_t dst_pitch,
                  const Dims& dims, std::size_t block);
inline void reverse_axes(Memory& mem, const std::byte* src, std::byte* dst, const Dims& dims, std::size_t block) {
  reverse_axes(mem, src, block, dst, block, dims, block);
}
// The hop fan-outs, innermost first, or outermost first.
Dims inner_first(const HopState& s);
Dims outer_first(const HopState& s);

// Each runs its plan (s.plan of its request) through run_pipeline (hop_pipeline.h).
void hier_all_gather(HopState& s, const void* send, void* recv, std::size_t count, DType t);
void hier_reduce_scatter(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op);
void hier_all_reduce(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op);
void hier_quant_all_gather(HopState& s, const void* send, void* recv, std::size_t count, DType t, const QuantSpec& q);
void hier_quant_reduce_scatter(HopState& s, const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                               const HopBits& bits, const QuantSpec& q);

}  // namespace tierzero
