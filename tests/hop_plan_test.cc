// HopPlan (comm/hier/hop_plan.h): where it cuts a collective into chunks,
// and that the chunks together carry the whole collective's bytes.
#include "comm/hier/hop_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tierzero {
namespace {

const Topology kTopo = Topology::parse("package=2,node=2,world=2", 8);

HopPlan plan(HopCollective k, std::size_t n, std::size_t esize, std::size_t chunk_bytes, const QuantSpec& q = {}) {
  HopRequest r(k, n, esize, q, parse_hop_bits("package=16,node=8,world=4"));
  r.chunk_bytes = chunk_bytes;
  return HopPlan(hop_groups(kTopo, three_level_hops()), r);
}

TEST(HopPlan, CutsAtTheChunkWithAShorterLastOne) {
  const HopPlan p = plan(HopCollective::all_gather, 1001, 2, 200);  // 100 elements a chunk
  EXPECT_EQ(p.num_chunks(), 11u);
  EXPECT_EQ(p.chunk_offset(10), 1000u);
  EXPECT_EQ(p.chunk_len(10), 1u);
  EXPECT_EQ(plan(HopCollective::all_gather, 50, 2, 200).num_chunks(), 1u);  // smaller than a chunk: whole
  EXPECT_EQ(plan(HopCollective::all_gather, 1001, 2, 0).num_chunks(), 1u);   // "whole"
  EXPECT_EQ(plan(HopCollective::all_reduce, 1001, 2, 200).num_chunks(), 1u); // never cut
  // One hop: nothing to overlap, so never cut.
  HopRequest r(HopCollective::all_gather, 1001, 2);
  r.chunk_bytes = 200;
  EXPECT_EQ(HopPlan(hop_groups(Topology::parse("world=8", 8), three_level_hops()), r).num_chunks(), 1u);
}

TEST(HopPlan, QuantisedChunksAreWholeBlocks) {
  const QuantSpec q{8, false, 64};
  // 150 elements of 4 bytes asked: cut at 128, two blocks.
  const HopPlan g = plan(HopCollective::all_gather_quantized, 1000, 4, 600, q);
  EXPECT_EQ(g.chunk_elements(), 128u);
  EXPECT_EQ(plan(HopCollective::all_gather_quantized, 1000, 4, 4, q).chunk_elements(), 64u);  // at least one block
  EXPECT_EQ(plan(HopCollective::reduce_scatter_quantized, 1024, 4, 600, q).chunk_elements(), 128u);
  // A rank's part that is not whole blocks: blocks run across ranks' parts, so whole.
  EXPECT_EQ(plan(HopCollective::reduce_scatter_quantized, 1000, 4, 600, q).num_chunks(), 1u);
}

TEST(HopPlan, ChunksCarryTheWholeCollectivesBytes) {
  const QuantSpec q{4, true, 32};
  for (HopCollective k : {HopCollective::all_gather, HopCollective::reduce_scatter, HopCollective::all_gather_quantized,
                          HopCollective::reduce_scatter_quantized}) {
    const HopPlan whole = plan(k, 1024 + 96, 2, 0, q), cut = plan(k, 1024 + 96, 2, 300, q);
    ASSERT_GT(cut.num_chunks(), 1u);
    ASSERT_EQ(whole.num_stages(), cut.num_stages());
    std::size_t transfers = 0;
    for (std::size_t st = 0; st < whole.num_stages(); ++st) {
      ASSERT_EQ(whole.stage(st, 0).transfer, cut.stage(st, 0).transfer);
      if (!whole.stage(st, 0).transfer) continue;
      ++transfers;
      EXPECT_EQ(cut.peer_bytes(st), whole.peer_bytes(st)) << static_cast<int>(k) << " stage " << st;
      EXPECT_EQ(cut.peer_values(st), whole.peer_values(st)) << static_cast<int>(k) << " stage " << st;
    }
    EXPECT_EQ(transfers, 3u);
  }
}

TEST(HopPlan, PipelinedStagesHaveTwoBuffersEach) {
  const HopPlan p = plan(HopCollective::reduce_scatter_quantized, 1024, 2, 256, {8, false, 64});
  ASSERT_TRUE(p.pipelined());
  std::vector<int> seen;
  for (std::size_t st = 0; st + 1 < p.num_stages(); ++st) {  // the last writes the caller's buffer
    const HopStage& g = p.stage(st, 0);
    ASSERT_GE(g.out[0], kNumNamedScratch);
    ASSERT_NE(g.out[0], g.out[1]);
    for (int o : g.out) {
      EXPECT_EQ(std::count(seen.begin(), seen.end(), o), 0) << "buffer " << o << " shared";
      seen.push_back(o);
      EXPECT_EQ(p.scratch()[o], g.out_bytes);
    }
  }
}

}  // namespace
}  // namespace tierzero
