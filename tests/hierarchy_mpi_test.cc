// Hierarchical collectives on every layout: identical results to the flat
// collectives (all-gather bit for bit, reductions exact on integer data and
// within float rounding of a double reference on random data) and traffic
// per level equal to the formulas of docs/algorithms.md.
#include "comm/hier/hierarchy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "mpi_test_util.h"
#include "tierzero/mpi.h"

namespace tierzero {
namespace {

using test::load;
using test::store;
using test::expect_traffic;
using test::value;

const std::size_t kHierarchicalCounts[] = {1, 7, 1001};

std::array<std::uint64_t, kNumLevels> hier_expect(const Topology& topo, std::size_t shard_bytes, int factor) {
  std::array<std::uint64_t, kNumLevels> e{};
  for (int l = 0; l < kNumLevels; ++l) e[l] = factor * test::hier_bytes(topo, l, shard_bytes);
  return e;
}

TEST(Hierarchical, AllGatherIsBitExactWithFlat) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    Hierarchy hier(*world);
    const int w = world->size(), me = world->rank();
    for (DType t : test::all_dtypes()) {
      for (std::size_t n : kHierarchicalCounts) {
        const std::size_t s = dtype_size(t);
        std::vector<std::byte> send(n * s), flat(n * w * s), got(n * w * s);
        for (std::size_t i = 0; i < n; ++i) store(t, send.data(), i, value(me, i, t) + 0.25 * (t == DType::f32));
        world->all_gather(send.data(), flat.data(), n, t);
        const auto before = world->traffic().snapshot();
        hier.all_gather(send.data(), got.data(), n, t);
        ASSERT_EQ(std::memcmp(flat.data(), got.data(), got.size()), 0) << topo.to_string() << " " << dtype_name(t) << " n=" << n;
        expect_traffic(*world, before, hier_expect(topo, n * s, 1), "hier all_gather");
      }
    }
  }
}

TEST(Hierarchical, ReduceScatterMatchesClosedForm) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    Hierarchy hier(*world);
    const int w = world->size(), me = world->rank();
    for (DType t : test::all_dtypes()) {
      for (std::size_t n : kHierarchicalCounts) {
        const std::size_t s = dtype_size(t);
        std::vector<std::byte> send(n * w * s), recv(n * s);
        for (std::size_t i = 0; i < n * w; ++i) store(t, send.data(), i, value(me, i, t));
        const auto before = world->traffic().snapshot();
        hier.reduce_scatter(send.data(), recv.data(), n, t, ReduceOp::sum);
        for (std::size_t i = 0; i < n; ++i) {
          double sum = 0;
          for (int r = 0; r < w; ++r) sum += value(r, me * n + i, t);
          ASSERT_EQ(load(t, recv.data(), i), sum) << topo.to_string() << " " << dtype_name(t);
        }
        expect_traffic(*world, before, hier_expect(topo, n * s, 1), "hier reduce_scatter");
        if (!is_float(t)) continue;
        hier.reduce_scatter(send.data(), recv.data(), n, t, ReduceOp::avg);
        const double eps = t == DType::f32 ? 0x1p-24 : t == DType::bf16 ? 0x1p-8 : 0x1p-11;
        for (std::size_t i = 0; i < n; ++i) {
          double sum = 0;
          for (int r = 0; r < w; ++r) sum += value(r, me * n + i, t);
          ASSERT_NEAR(load(t, recv.data(), i), sum / w, eps * std::abs(sum / w)) << "avg is over all ranks";
        }
      }
    }
  }
}

TEST(Hierarchical, AllReduceMatchesClosedForm) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    Hierarchy hier(*world);
    const int w = world->size(), me = world->rank();
    for (DType t : test::all_dtypes()) {
      for (std::size_t n : kHierarchicalCounts) {
        const std::size_t s = dtype_size(t);
        std::vector<std::byte> send(n * s), recv(n * s);
        for (std::size_t i = 0; i < n; ++i) store(t, send.data(), i, value(me, i, t));
        const auto before = world->traffic().snapshot();
        hier.all_reduce(send.data(), recv.data(), n, t, ReduceOp::sum);
        for (std::size_t i = 0; i < n; ++i) {
          double sum = 0;
          for (int r = 0; r < w; ++r) sum += value(r, i, t);
          ASSERT_EQ(load(t, recv.data(), i), sum);
        }
        if (hier.num_hops() >= 2) {
          // Padded to c = ceil(n / W) per rank, reduce-scatter then all-gather.
          const std::size_t c = (n + w - 1) / w;
          expect_traffic(*world, before, hier_expect(topo, c * s, 2), "hier all_reduce");
        }
      }
    }
  }
}

TEST(Hierarchical, RandomFloatsWithinRoundingOfDoubleReference) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    Hierarchy hier(*world);
    const int w = world->size(), me = world->rank();
    const std::size_t n = 513;
    auto x = [](int r, std::size_t i) { return test::gauss(r, i); };
    std::vector<float> send(n * w), rs(n), ar(n * w);
    for (std::size_t i = 0; i < n * w; ++i) send[i] = x(me, i);
    hier.reduce_scatter(send.data(), rs.data(), n, DType::f32, ReduceOp::avg);
    hier.all_reduce(send.data(), ar.data(), n * w, DType::f32, ReduceOp::sum);
    for (std::size_t i = 0; i < n * w; ++i) {
      double ref = 0, mag = 0;
      for (int r = 0; r < w; ++r) ref += x(r, i), mag += std::abs(x(r, i));
      const double tol = w * 0x1p-24 * mag + 1e-30;
      ASSERT_NEAR(ar[i], ref, tol);
      if (i / n == static_cast<std::size_t>(me)) {
        ASSERT_NEAR(rs[i % n], ref / w, tol / w + 0x1p-24 * std::abs(ref / w));
      }
    }
  }
}

TEST(Hierarchical, NonBlockingCallsCompleteInAnyWaitOrder) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    Hierarchy hier(*world);
    const int w = world->size(), me = world->rank();
    std::vector<float> a(3, static_cast<float>(me)), ag(3 * w), b(3 * w, 2.0f), rs(3), c(5, 1.0f);
    Request r1 = hier.iall_gather(a.data(), ag.data(), 3, DType::f32);
    Request r2 = hier.ireduce_scatter(b.data(), rs.data(), 3, DType::f32, ReduceOp::sum);
    Request r3 = hier.iall_reduce(c.data(), c.data(), 5, DType::f32, ReduceOp::avg);
    r3.wait();
    r1.wait();
    r2.wait();
    for (int j = 0; j < w; ++j) ASSERT_EQ(ag[3 * j], static_cast<float>(j));
    for (float v : rs) ASSERT_EQ(v, 2.0f * w);
    for (float v : c) ASSERT_EQ(v, 1.0f);
  }
}

// Measured, not computed: the network carries ranks-per-node times fewer
// bytes under the hierarchical all-gather than under the flat one.
TEST(Hierarchical, WorldBytesShrinkByRanksPerNode) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    if (topo.fanout(Level::world) == 1) continue;
    auto world = mpi_world(topo);
    Hierarchy hier(*world);
    const std::size_t per_node = topo.fanout(Level::package) * topo.fanout(Level::node), n = 1024;
    std::vector<float> send(n, 1.0f), recv(n * world->size());
    auto world_bytes = [&](auto gather) {
      const auto before = world->traffic().snapshot();
      gather();
      return traffic_delta(before, world->traffic().snapshot())[static_cast<int>(Level::world)];
    };
    const std::uint64_t flat = world_bytes([&] { world->all_gather(send.data(), recv.data(), n, DType::f32); });
    const std::uint64_t layered = world_bytes([&] { hier.all_gather(send.data(), recv.data(), n, DType::f32); });
    EXPECT_GT(layered, 0u) << topo.to_string();
    EXPECT_EQ(flat, per_node * layered) << topo.to_string();
  }
}

}  // namespace
}  // namespace tierzero
