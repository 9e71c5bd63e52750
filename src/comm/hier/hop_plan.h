// HopPlan: one hierarchical collective planned once. Built from the hops a
// Hierarchy runs over and what is asked of it (HopRequest: the collective,
// the element size, each rank's count, the bits per hop and quantisation
// blocks, the chunk size), it lists the collective's stages in order, each
// either a collective on one hop (its group, call, count per peer block,
// bits) or local work (reordering, quantising, summing), with the scratch
// buffer each stage writes, and cuts each rank's part of the message into
// chunks that flow through the stages as a pipeline (comm/hier/hop_pipeline.h).
//
// One walk, three readers: the algorithms (hier_*.cc) execute its stages,
// ScratchSizes (scratch_sizes.h) sizes the buffers from it, and the traffic
// model (sim/traffic_model.cc) prices its transfers.
//
// Chunks (HopRequest::chunk_bytes, the plan key hop_chunk_bytes): bytes of
// each rank's shard per chunk (an all-gather's input, a reduce-scatter's
// output). A collective is cut only where pipelining can help and its
// results stay the unchunked ones: over two hops or more, never for the
// all-reduce, quantised ones on whole quantisation blocks (so the blocks
// are the unchunked collective's), and the quantised reduce-scatter only
// when each rank's count is a whole number of blocks (its blocks run across
// the ranks' parts otherwise). A chunk at least the message runs it whole.
// Value type.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/quant.h"
#include "tierzero/dtype.h"
#include "tierzero/topology.h"

namespace tierzero {

// The scratch buffers by use, as a whole (unchunked) collective names them,
// one name each. The quantised all-gather and reduce-scatter share two
// (they never run at once on one HopState); the quantised all-gather also
// runs the plain one on packed bytes. A pipelined collective keeps each
// stage's output for two chunks at once in pipe buffers (pipe_scratch).
enum class Scratch : int {
  plain_even = 0, plain_odd = 1,  // the plain algorithms, alternately hop by hop (plain_scratch)
  // Quantised all-gather: this rank's packed shard (first), every rank's
  // (second). Quantised reduce-scatter: the input reordered (first) and
  // summed in fp32 (second) before the first hop, the running fp32 sum
  // (first) after it.
  quant_first = 2, quant_second = 3,
  hop_send = 4, hop_recv = 5,  // quantised reduce-scatter: one hop's all-to-all
};
inline constexpr int kNumNamedScratch = 6;
inline constexpr int kNumPipeScratch = 12;  // two per stage output: the quantised reduce-scatter's 2 per hop, 3 hops
inline constexpr int kNumScratch = kNumNamedScratch + kNumPipeScratch;
inline Scratch plain_scratch(std::size_t hop) { return hop % 2 ? Scratch::plain_odd : Scratch::plain_even; }
inline int scratch_index(Scratch s) { return static_cast<int>(s); }

// One hop: the levels it spans and its members (more than one).
struct HopGroup {
  std::vector<Level> levels;
  int fanout = 1;
};
// The hops of `spec` within group(top) of `topo`, innermost first, each with
// only its levels up to `top`; hops of one member dropped.
std::vector<HopGroup> hop_groups(const Topology& topo, const HopSpec& spec, Level top = Level::world);

enum class HopCollective { all_gather, reduce_scatter, all_reduce, all_gather_quantized, reduce_scatter_quantized };

// What is asked of a Hierarchy's collective.
struct HopRequest {
  HopRequest() = default;
  HopRequest(HopCollective k, std::size_t n, std::size_t es, const QuantSpec& q = {}, const HopBits& b = {})
      : kind(k), count(n), esize(es), bits(b), quant(q) {}
  HopCollective kind = HopCollective::all_gather;
  std::size_t count = 0;        // the call's count: an all-gather's input, a reduce-scatter's output, an all-reduce's buffer
  std::size_t esize = 1;        // bytes per element of the call's type
  HopBits bits;                 // reduce_scatter_quantized: bits per hop
  QuantSpec quant;              // the quantised ones: block and mode (all_gather_quantized: bits too)
  std::size_t chunk_bytes = 0;  // bytes of each rank's count per chunk; 0: whole
  bool operator==(const HopRequest& o) const;
};

// One stage of a chunk's way through the collective.
struct HopStage {
  bool transfer = false;  // a collective on one hop; otherwise local work (the algorithm's, by position)
  std::size_t hop = 0;    // transfer: index into HopPlan::hops()
  Collective op = Collective::all_gather;  // transfer: all_gather, reduce_scatter, all_reduce or all_to_all
  std::size_t count = 0;  // transfer: the call's count, elements of esize bytes (per peer block)
  std::size_t esize = 1;  // transfer: bytes per element on the wire (1: packed bytes)
  int bits = 16;          // transfer: the bits its values travel at
  std::size_t values = 0; // transfer: the values of the collective's type in each peer block (packed or not)
  std::size_t out_bytes = 0;        // bytes it writes into its scratch buffer
  std::array<int, 2> out{-1, -1};  // that buffer for even and odd chunks (-1: none, or the caller's)
  std::size_t peer_bytes() const { return count * esize; }  // what each peer sends this rank
};

class HopPlan {
 public:
  HopPlan(std::vector<HopGroup> hops, const HopRequest& r);

  const HopRequest& request() const { return req_; }
  const std::vector<HopGroup>& hops() const { return hops_; }
  std::size_t group_size() const { return group_; }
  // Chunks: each rank's count cut at chunk_elements().
  std::size_t num_chunks() const { return num_chunks_; }
  std::size_t chunk_elements() const { return chunk_; }
  std::size_t chunk_offset(std::size_t c) const { return c * chunk_; }
  std::size_t chunk_len(std::size_t c) const { return c + 1 == num_chunks_ ? req_.count - c * chunk_ : chunk_; }
  bool pipelined() const { return num_chunks_ > 1; }
  // Stage `st` of chunk `c`.
  std::size_t num_stages() const { return full_.size(); }
  const HopStage& stage(std::size_t st, std::size_t c) const { return (c + 1 == num_chunks_ ? last_ : full_)[st]; }
  // Bytes each peer sends this rank in transfer stage `st`, and the values
  // they carry (HopStage::values), all chunks together.
  std::uint64_t peer_bytes(std::size_t st) const;
  std::uint64_t peer_values(std::size_t st) const;
  // The bytes each scratch buffer reaches.
  const std::array<std::size_t, kNumScratch>& scratch() const { return scratch_; }

 private:
  std::vector<HopStage> walk(std::size_t len) const;
  std::vector<HopGroup> hops_;
  HopRequest req_;
  std::size_t group_ = 1, chunk_ = 0, num_chunks_ = 1;
  std::vector<HopStage> full_, last_;
  std::array<std::size_t, kNumScratch> scratch_{};
};

}  // namespace tierzero
