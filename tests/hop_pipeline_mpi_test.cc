// Pipelined hops (comm/hier/hop_plan.h): every hierarchical collective cut
// into chunks gives the whole collective's result bit for bit (the
// all-gathers on any data, the reductions on integer-valued data, whose
// sums are exact in any order, and the quantised reduce-scatter on random
// data: its blocks and sums are the whole one's), moves the bytes per level
// its plan says, and grows exactly the scratch ScratchSizes computes from
// the plan. Chunks that divide the message, that do not, one block, and one
// larger than the message.
#include <gtest/gtest.h>

#include <cstring>

#include "comm/hier/hierarchy.h"
#include "comm/hier/scratch_sizes.h"
#include "mpi_test_util.h"
#include "tierzero/mpi.h"

namespace tierzero {
namespace {

using test::store;
using test::value;

// Chunk sizes in elements: one that divides none of the counts, one that
// divides some, one larger than every message.
const std::size_t kChunks[] = {5, 64, 1000};
const std::size_t kPipelinedCounts[] = {1, 7, 150};

// The bytes per level the plan's transfers receive (one level per hop).
std::array<std::uint64_t, kNumLevels> plan_bytes(const HopPlan& p) {
  std::array<std::uint64_t, kNumLevels> b{};
  for (std::size_t st = 0; st < p.num_stages(); ++st) {
    const HopStage& g = p.stage(st, 0);
    if (!g.transfer) continue;
    const HopGroup& hop = p.hops()[g.hop];
    EXPECT_EQ(hop.levels.size(), 1u);
    b[static_cast<int>(hop.levels[0])] += p.peer_bytes(st) * static_cast<std::uint64_t>(hop.fanout - 1);
  }
  return b;
}

// Runs `call` on a whole and a pipelined hierarchy: equal bytes out, and the
// pipelined one's traffic per level is its plan's.
template <class Call>
void expect_same(Communicator& world, Hierarchy& whole, Hierarchy& piped, const HopRequest& r, std::size_t out_bytes,
                 Call call, const std::string& what) {
  std::vector<std::byte> a(out_bytes), b(out_bytes);
  call(whole, a.data());
  const auto before = world.traffic().snapshot();
  call(piped, b.data());
  const auto got = traffic_delta(before, world.traffic().snapshot());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), out_bytes), 0) << what;
  const HopPlan plan(hop_groups(world.topology(), three_level_hops()), r);
  // A one-hop all-reduce is the transport's own call, counted by communicator.h's rule (and priced flat).
  if (plan.num_stages() == 1 && plan.stage(0, 0).op == Collective::all_reduce) return;
  EXPECT_EQ(got, plan_bytes(plan)) << what << " (" << plan.num_chunks() << " chunks)";
}

std::string name(const Topology& topo, DType t, std::size_t n, std::size_t chunk) {
  return topo.to_string() + " " + std::string(dtype_name(t)) + " n=" + std::to_string(n) + " chunk=" + std::to_string(chunk);
}

TEST(PipelinedHops, PlainCollectivesEqualTheWholeOnes) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    Hierarchy whole(*world), piped(*world);
    const std::size_t w = static_cast<std::size_t>(world->size());
    const int me = world->rank();
    for (DType t : test::all_dtypes()) {
      const std::size_t es = dtype_size(t);
      for (std::size_t ce : kChunks) {
        piped.set_chunk_bytes(ce * es);
        for (std::size_t n : kPipelinedCounts) {
          std::vector<std::byte> shard(n * es), input(n * w * es), flat(n * w * es), got(n * w * es);
          for (std::size_t i = 0; i < n; ++i) store(t, shard.data(), i, value(me, i, t));
          for (std::size_t i = 0; i < n * w; ++i) store(t, input.data(), i, value(me, i, t));
          const std::string what = name(topo, t, n, ce);
          HopRequest r(HopCollective::all_gather, n, es);
          r.chunk_bytes = ce * es;
          expect_same(*world, whole, piped, r, n * w * es, [&](Hierarchy& h, std::byte* out) {
            h.all_gather(shard.data(), out, n, t);
          }, "all_gather " + what);
          world->all_gather(shard.data(), flat.data(), n, t);
          piped.all_gather(shard.data(), got.data(), n, t);
          EXPECT_EQ(std::memcmp(flat.data(), got.data(), got.size()), 0) << "all_gather against flat " << what;
          r.kind = HopCollective::reduce_scatter;
          for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
            if (op == ReduceOp::avg && !is_float(t)) continue;
            expect_same(*world, whole, piped, r, n * es, [&](Hierarchy& h, std::byte* out) {
              h.reduce_scatter(input.data(), out, n, t, op);
            }, "reduce_scatter " + what);
          }
          r.kind = HopCollective::all_reduce;  // never cut: the same whole plan
          expect_same(*world, whole, piped, r, n * es, [&](Hierarchy& h, std::byte* out) {
            h.all_reduce(shard.data(), out, n, t, ReduceOp::sum);
          }, "all_reduce " + what);
        }
      }
    }
  }
}

TEST(PipelinedHops, QuantisedCollectivesGiveTheWholeOnesBits) {
  const char* const kBits[] = {"package=8,node=8,world=8", "package=16,node=8,world=4", "package=4,node=4,world=4"};
  const std::size_t kBlock = 16;
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    Hierarchy whole(*world), piped(*world);
    const std::size_t w = static_cast<std::size_t>(world->size());
    const int me = world->rank();
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
      const std::size_t es = dtype_size(t);
      // One block; 40 elements, cut at 32 (whole blocks); more than any message.
      for (std::size_t ce : {kBlock, std::size_t{40}, std::size_t{1000}}) {
        piped.set_chunk_bytes(ce * es);
        // Whole blocks per rank (cut), and not (the reduce-scatter runs whole).
        for (std::size_t n : {5 * kBlock, 5 * kBlock + 3}) {
          std::vector<float> mine(n * w);
          for (std::size_t i = 0; i < n * w; ++i) mine[i] = test::gauss(me, i);
          std::vector<std::byte> input(n * w * es);
          from_f32(t, mine.data(), input.data(), n * w);
          for (int bits : {8, 4}) {
            for (bool asym : {false, true}) {
              const QuantSpec q{bits, asym, kBlock};
              const std::string what = name(topo, t, n, ce) + " int" + std::to_string(bits) + (asym ? " asym" : "");
              HopRequest r(HopCollective::all_gather_quantized, n, es, q);
              r.chunk_bytes = ce * es;
              expect_same(*world, whole, piped, r, n * w * es, [&](Hierarchy& h, std::byte* out) {
                h.all_gather_quantized(input.data(), out, n, t, q);
              }, "all_gather_quantized " + what);
            }
          }
          for (const char* spec : kBits) {
            const QuantSpec q{8, false, kBlock};
            HopRequest r(HopCollective::reduce_scatter_quantized, n, es, q, parse_hop_bits(spec));
            r.chunk_bytes = ce * es;
            expect_same(*world, whole, piped, r, n * es, [&](Hierarchy& h, std::byte* out) {
              h.reduce_scatter_quantized(input.data(), out, n, t, ReduceOp::avg, r.bits, q);
            }, "reduce_scatter_quantized " + std::string(spec) + " " + name(topo, t, n, ce));
          }
        }
      }
    }
  }
}

TEST(PipelinedHops, ScratchIsThePlans) {
  const std::size_t n = 300;
  const QuantSpec q{8, false, 16};
  const HopBits bits = parse_hop_bits("package=16,node=8,world=4");
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    const std::size_t w = static_cast<std::size_t>(world->size());
    std::vector<float> send(n * w, 1.0f), recv(n * w);
    for (std::size_t ce : {std::size_t{0}, std::size_t{40}}) {
      const std::size_t chunk = ce * sizeof(float);
      // Each buffer grows to the largest any of the calls asks for.
      Hierarchy h(*world);
      h.set_chunk_bytes(chunk);
      ScratchSizes want(topo, three_level_hops(), chunk);
      h.all_gather(send.data(), recv.data(), n, DType::f32), want.all_gather(n, 4);
      h.reduce_scatter(send.data(), recv.data(), n, DType::f32, ReduceOp::sum), want.reduce_scatter(n, 4);
      h.all_reduce(send.data(), recv.data(), n, DType::f32, ReduceOp::sum), want.all_reduce(n, 4);
      h.all_gather_quantized(send.data(), recv.data(), n, DType::f32, q), want.all_gather_quantized(n, 4, q);
      h.reduce_scatter_quantized(send.data(), recv.data(), n - 12, DType::f32, ReduceOp::sum, bits, q);
      want.reduce_scatter_quantized(n - 12, 4, bits, q);  // 288 = 18 blocks: cut
      EXPECT_EQ(h.scratch_bytes(), want.total()) << "chunk " << ce << " on " << topo.to_string();
    }
  }
}

}  // namespace
}  // namespace tierzero
