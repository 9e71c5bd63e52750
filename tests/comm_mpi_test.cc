// Flat collectives of the MPI communicator on every layout of the job's rank
// count, every dtype, uneven counts; closed-form results and traffic.
#include <gtest/gtest.h>

#include <cstring>

#include "mpi_test_util.h"
#include "tierzero/error.h"
#include "tierzero/mesh.h"
#include "tierzero/mpi.h"

namespace tierzero {
namespace {

using test::load;
using test::store;
using test::expect_traffic;
using test::value;

const std::size_t kCounts[] = {1, 7, 1001};

TEST(FlatCollectives, AllGather) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    const int w = world->size(), me = world->rank();
    for (DType t : test::all_dtypes()) {
      for (std::size_t n : kCounts) {
        const std::size_t s = dtype_size(t);
        std::vector<std::byte> send(n * s), recv(n * w * s);
        for (std::size_t i = 0; i < n; ++i) store(t, send.data(), i, value(me, i, t));
        const auto before = world->traffic().snapshot();
        world->all_gather(send.data(), recv.data(), n, t);
        for (int j = 0; j < w; ++j)
          for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(load(t, recv.data(), j * n + i), value(j, i, t));
        std::array<std::uint64_t, kNumLevels> expect{};
        for (int l = 0; l < kNumLevels; ++l) expect[l] = test::flat_bytes(topo, l, n * s);
        expect_traffic(*world, before, expect, "all_gather");
      }
    }
  }
}

TEST(FlatCollectives, ReduceScatterSumAndAvg) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    const int w = world->size(), me = world->rank();
    for (DType t : test::all_dtypes()) {
      for (std::size_t n : kCounts) {
        const std::size_t s = dtype_size(t);
        std::vector<std::byte> send(n * w * s), recv(n * s);
        for (std::size_t i = 0; i < n * w; ++i) store(t, send.data(), i, value(me, i, t));
        const auto before = world->traffic().snapshot();
        world->reduce_scatter(send.data(), recv.data(), n, t, ReduceOp::sum);
        for (std::size_t i = 0; i < n; ++i) {
          double sum = 0;
          for (int r = 0; r < w; ++r) sum += value(r, me * n + i, t);
          ASSERT_EQ(load(t, recv.data(), i), sum) << dtype_name(t);
        }
        std::array<std::uint64_t, kNumLevels> expect{};
        for (int l = 0; l < kNumLevels; ++l) expect[l] = test::flat_bytes(topo, l, n * s);
        expect_traffic(*world, before, expect, "reduce_scatter");
        if (!is_float(t)) {
          EXPECT_THROW(world->reduce_scatter(send.data(), recv.data(), n, t, ReduceOp::avg), CommError);
          continue;
        }
        world->reduce_scatter(send.data(), recv.data(), n, t, ReduceOp::avg);
        const double eps = t == DType::f32 ? 0x1p-24 : t == DType::bf16 ? 0x1p-8 : 0x1p-11;
        for (std::size_t i = 0; i < n; ++i) {
          double sum = 0;
          for (int r = 0; r < w; ++r) sum += value(r, me * n + i, t);
          ASSERT_NEAR(load(t, recv.data(), i), sum / w, eps * std::abs(sum / w)) << dtype_name(t);
        }
      }
    }
  }
}

TEST(FlatCollectives, AllReduceUnevenCountsAndInPlace) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    const int w = world->size(), me = world->rank();
    for (DType t : test::all_dtypes()) {
      for (std::size_t n : kCounts) {
        const std::size_t s = dtype_size(t);
        std::vector<std::byte> buf(n * s);
        for (std::size_t i = 0; i < n; ++i) store(t, buf.data(), i, value(me, i, t));
        const auto before = world->traffic().snapshot();
        world->all_reduce(buf.data(), buf.data(), n, t, ReduceOp::sum);
        for (std::size_t i = 0; i < n; ++i) {
          double sum = 0;
          for (int r = 0; r < w; ++r) sum += value(r, i, t);
          ASSERT_EQ(load(t, buf.data(), i), sum);
        }
        // Reduce-scatter + all-gather over near-even chunks e_j = n/W (+1 for j < n%W):
        // from peer j, (e_me + e_j) elements.
        std::array<std::uint64_t, kNumLevels> expect{};
        for (int j = 0; j < w; ++j) {
          if (j == me) continue;
          const std::size_t e_me = n / w + (static_cast<std::size_t>(me) < n % w);
          const std::size_t e_j = n / w + (static_cast<std::size_t>(j) < n % w);
          expect[static_cast<int>(topo.separating_level(me, j))] += (e_me + e_j) * s;
        }
        expect_traffic(*world, before, expect, "all_reduce");
      }
    }
  }
}

TEST(FlatCollectives, AllReduceDivisibleCountMatchesClosedForm) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    const std::size_t n = 64 * world->size();
    std::vector<float> buf(n, 1.0f);
    const auto before = world->traffic().snapshot();
    world->all_reduce(buf.data(), buf.data(), n, DType::f32, ReduceOp::avg);
    for (float v : buf) ASSERT_EQ(v, 1.0f);
    std::array<std::uint64_t, kNumLevels> expect{};
    for (int l = 0; l < kNumLevels; ++l) expect[l] = 2 * test::flat_bytes(topo, l, 64 * 4);
    expect_traffic(*world, before, expect, "all_reduce");
  }
}

TEST(FlatCollectives, AllToAllAndAllToAllv) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    const int w = world->size(), me = world->rank();
    for (DType t : test::all_dtypes()) {
      const std::size_t s = dtype_size(t), n = 5;
      std::vector<std::byte> send(n * w * s), recv(n * w * s);
      for (std::size_t i = 0; i < n * w; ++i) store(t, send.data(), i, value(me, i, t));
      auto before = world->traffic().snapshot();
      world->all_to_all(send.data(), recv.data(), n, t);
      for (int j = 0; j < w; ++j)
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(load(t, recv.data(), j * n + i), value(j, me * n + i, t));
      std::array<std::uint64_t, kNumLevels> expect{};
      for (int l = 0; l < kNumLevels; ++l) expect[l] = test::flat_bytes(topo, l, n * s);
      expect_traffic(*world, before, expect, "all_to_all");

      // Rank a sends (a + b) % 3 + 1 elements to rank b, valued value(a, 100*b + i).
      auto len = [](int a, int b) { return static_cast<std::size_t>((a + b) % 3 + 1); };
      std::vector<std::size_t> sc(w), sd(w), rc(w), rd(w);
      std::size_t so = 0, ro = 0;
      for (int j = 0; j < w; ++j) {
        sc[j] = len(me, j), sd[j] = so, so += sc[j];
        rc[j] = len(j, me), rd[j] = ro, ro += rc[j];
      }
      std::vector<std::byte> vs(so * s), vr(ro * s);
      for (int j = 0; j < w; ++j)
        for (std::size_t i = 0; i < sc[j]; ++i) store(t, vs.data(), sd[j] + i, value(me, 100 * j + i, t));
      before = world->traffic().snapshot();
      world->iall_to_allv(vs.data(), sc, sd, vr.data(), rc, rd, t).wait();
      expect = {};
      for (int j = 0; j < w; ++j) {
        for (std::size_t i = 0; i < rc[j]; ++i) ASSERT_EQ(load(t, vr.data(), rd[j] + i), value(j, 100 * me + i, t));
        if (j != me) expect[static_cast<int>(topo.separating_level(me, j))] += rc[j] * s;
      }
      expect_traffic(*world, before, expect, "all_to_allv");
    }
  }
}

TEST(FlatCollectives, BroadcastFromLastRank) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    const int w = world->size(), me = world->rank(), root = w - 1;
    std::vector<std::uint16_t> buf(333);
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = f32_to_bf16(static_cast<float>(value(me, i, DType::bf16)));
    const auto before = world->traffic().snapshot();
    world->broadcast(buf.data(), buf.size(), DType::bf16, root);
    for (std::size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(bf16_to_f32(buf[i]), value(root, i, DType::bf16));
    std::array<std::uint64_t, kNumLevels> expect{};
    if (me != root) expect[static_cast<int>(topo.separating_level(me, root))] = buf.size() * 2;
    expect_traffic(*world, before, expect, "broadcast");
  }
}

TEST(FlatCollectives, NonBlockingOverlap) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    const int w = world->size(), me = world->rank();
    std::vector<float> a(10, static_cast<float>(me)), ag(10 * w), b(10 * w, 1.0f), rs(10);
    Request r1 = world->iall_gather(a.data(), ag.data(), 10, DType::f32);
    Request r2 = world->ireduce_scatter(b.data(), rs.data(), 10, DType::f32, ReduceOp::sum);
    r2.wait();
    r1.wait();
    EXPECT_TRUE(r1.test());
    for (int j = 0; j < w; ++j) ASSERT_EQ(ag[j * 10], static_cast<float>(j));
    for (float v : rs) ASSERT_EQ(v, static_cast<float>(w));
  }
}

TEST(FlatCollectives, SplitGivesGroupsCrossGroupsAndHops) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    const int me = world->rank();
    for (Level l : kAllLevels) {
      EXPECT_EQ(world->split(l)->members(), topo.group(l, me));
      EXPECT_EQ(world->cross(l)->members(), topo.cross_group(l, me));
      auto hop = world->hop(l);
      EXPECT_EQ(hop->members(), topo.hop_group(l, me));
      EXPECT_EQ(hop->size(), topo.fanout(l));
      // A collective on the split communicator reaches exactly its members.
      int sum = 0;
      float mine = static_cast<float>(me), total = 0;
      hop->all_reduce(&mine, &total, 1, DType::f32, ReduceOp::sum);
      for (int r : topo.hop_group(l, me)) sum += r;
      EXPECT_EQ(total, static_cast<float>(sum));
    }
  }
}

// A tp = 1 mesh (tierzero/mesh.h) is data-parallel over the whole world, on every layout; a tp > 1 one
// splits it into tensor and data groups.
TEST(Mesh, TpOneIsDataParallelOverTheWorldAndTpSplitsIt) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    const Mesh mesh(*world);
    EXPECT_EQ(&mesh.data(), world.get());
    EXPECT_EQ(mesh.data_rank(), world->rank());
    EXPECT_EQ(mesh.data_size(), world->size());
    EXPECT_EQ(mesh.data_topology(), topo);
    EXPECT_EQ(mesh.tp_level(), topo.levels().front());
    // tp = the innermost level's fan-out: the tensor group is that level's hop group (every coordinate but
    // the tensor level's shared), the data group the ranks of the same coordinate there (its cross group),
    // laid out as the world without that level's fan-out; a collective on the tensor group reaches its members.
    const Level l = topo.levels().front();
    const int fanout = topo.fanout(l), me = world->rank();
    if (fanout > 1) {
      const Mesh tp(*world, MeshShape{fanout, std::nullopt});
      ASSERT_NE(tp.tensor(), nullptr);
      EXPECT_EQ(tp.tensor()->members(), topo.hop_group(l, me));
      EXPECT_EQ(tp.data().members(), topo.cross_group(l, me));
      EXPECT_EQ(tp.tp_rank(), topo.coord(me, l));
      EXPECT_EQ(tp.data_size(), world->size() / fanout);
      EXPECT_EQ(tp.data_topology().fanout(l), 1);
      float mine = static_cast<float>(me), total = 0, sum = 0;
      tp.tensor()->all_reduce(&mine, &total, 1, DType::f32, ReduceOp::sum);
      for (int r : topo.hop_group(l, me)) sum += static_cast<float>(r);
      EXPECT_EQ(total, sum);
    }
  }
}

TEST(FlatCollectives, WorldRejectsMismatchedTopology) {
  const int w = test::world_size();
  EXPECT_THROW(mpi_world(Topology({1, 1, w + 1}, {Level::world})), TopologyError);
  EXPECT_THROW(resolve_topology("node=" + std::to_string(w + 1) + ",world=1"), TopologyError);
  const Topology detected = resolve_topology("");
  EXPECT_EQ(detected.size(), w);
  EXPECT_EQ(detected.fanout(Level::node), w);  // all ranks of this test run on one host
}

}  // namespace
}  // namespace tierzero
