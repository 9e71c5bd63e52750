// Quantised collectives (qwZ all-gather, qgZ hierarchical reduce-scatter)
// on every layout: same layout as the plain collectives, error against a
// double-precision reference within the quantiser's bounds, exact when
// every hop is unquantised, and bytes per level equal to the formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "mpi_test_util.h"
#include "tierzero/error.h"
#include "comm/hier/hierarchy.h"
#include "tierzero/mpi.h"

namespace tierzero {
namespace {

float gauss(int rank, std::size_t i) { return test::gauss(rank, i); }

using test::expect_traffic;

double relative_l2(const std::vector<double>& ref, const std::vector<float>& got) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) num += (ref[i] - got[i]) * (ref[i] - got[i]), den += ref[i] * ref[i];
  return std::sqrt(num / den);
}

TEST(QuantizedCollectives, AllGatherKeepsLayoutAndErrorBound) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    Hierarchy hier(*world);
    const int w = world->size(), me = world->rank();
    for (DType t : {DType::f32, DType::bf16}) {
      for (const QuantSpec& q : {QuantSpec{8, false, 256}, QuantSpec{4, true, 32}, QuantSpec{8, true, 64}}) {
        for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{4099}}) {
          const std::size_t s = dtype_size(t);
          std::vector<float> mine(n);
          for (std::size_t i = 0; i < n; ++i) mine[i] = gauss(me, i);
          std::vector<std::byte> send(n * s), recv(n * w * s);
          from_f32(t, mine.data(), send.data(), n);
          const auto before = world->traffic().snapshot();
          hier.all_gather_quantized(send.data(), recv.data(), n, t, q);
          // Layout: shard j is exactly rank j's quantise/dequantise round trip.
          std::vector<double> ref(n * w);
          std::vector<float> got(n * w);
          to_f32(t, recv.data(), got.data(), n * w);
          for (int j = 0; j < w; ++j) {
            std::vector<float> theirs(n);
            for (std::size_t i = 0; i < n; ++i) theirs[i] = gauss(j, i);
            std::vector<std::byte> in(n * s), packed(quant_packed_bytes(n, q)), out(n * s);
            from_f32(t, theirs.data(), in.data(), n);
            quantize(in.data(), t, n, q, packed.data());
            dequantize(packed.data(), n, q, out.data(), t);
            ASSERT_EQ(0, std::memcmp(out.data(), recv.data() + j * n * s, n * s)) << "shard " << j;
            std::vector<float> exact(n);
            to_f32(t, in.data(), exact.data(), n);
            for (std::size_t i = 0; i < n; ++i) ref[j * n + i] = exact[i];
          }
          if (n >= 1000) {
            EXPECT_LT(relative_l2(ref, got), q.bits == 8 ? 0.01 : 0.10);
          }
          std::array<std::uint64_t, kNumLevels> expect{};
          for (int l = 0; l < kNumLevels; ++l) expect[l] = test::hier_bytes(topo, l, quant_packed_bytes(n, q));
          expect_traffic(*world, before, expect, "quantised all_gather");
        }
      }
    }
  }
}

struct BitsCase {
  const char* spec;
  QuantSpec q;
};

// Each hop quantises partial sums that are again Gaussian, so its relative
// error obeys the single-quantisation bound e(bits) (1% int8, 10% int4;
// bf16 transport ~2^-8); independent errors add in quadrature over the hops
// with fan-out > 1, plus the final rounding to the output type.
double composed_bound(const Topology& topo, const HopBits& bits, DType t) {
  double var = 0;
  for (Level l : kAllLevels) {
    if (topo.fanout(l) == 1) continue;
    const int b = bits.at(l);
    const double e = b == 8 ? 0.01 : b == 4 ? 0.10 : t == DType::bf16 ? 0x1p-8 : 1e-6;
    var += e * e;
  }
  return std::sqrt(var) + (t == DType::bf16 ? 0x1p-8 : 1e-6);
}

TEST(QuantizedCollectives, ReduceScatterIsTheMeanOverAllRanks) {
  const BitsCase cases[] = {{"package=16,node=16,world=16", {8, false, 256}},
                            {"package=8,node=8,world=8", {8, false, 256}},
                            {"package=16,node=8,world=4", {8, true, 32}},
                            {"package=4,node=4,world=4", {4, true, 32}}};
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    Hierarchy hier(*world);
    const int w = world->size(), me = world->rank();
    for (const BitsCase& c : cases) {
      const HopBits bits = parse_hop_bits(c.spec);
      for (DType t : {DType::f32, DType::bf16}) {
        for (std::size_t n : {std::size_t{1000}, std::size_t{1037}}) {
          const std::size_t s = dtype_size(t);
          std::vector<float> mine(n * w);
          for (std::size_t i = 0; i < n * w; ++i) mine[i] = gauss(me, i);
          std::vector<std::byte> send(n * w * s), recv(n * s);
          from_f32(t, mine.data(), send.data(), n * w);
          const auto before = world->traffic().snapshot();
          hier.reduce_scatter_quantized(send.data(), recv.data(), n, t, ReduceOp::avg, bits, c.q);
          const auto got_traffic = traffic_delta(before, world->traffic().snapshot());
          std::vector<double> ref(n, 0.0);
          for (int r = 0; r < w; ++r) {
            std::vector<float> theirs(n * w);
            for (std::size_t i = 0; i < n * w; ++i) theirs[i] = gauss(r, i);
            std::vector<std::byte> as_t(n * w * s);
            from_f32(t, theirs.data(), as_t.data(), n * w);
            to_f32(t, as_t.data(), theirs.data(), n * w);
            for (std::size_t i = 0; i < n; ++i) ref[i] += theirs[me * n + i] / w;
          }
          std::vector<float> got(n);
          to_f32(t, recv.data(), got.data(), n);
          const double bound = composed_bound(topo, bits, t);
          EXPECT_LT(relative_l2(ref, got), bound) << c.spec << " " << dtype_name(t) << " on " << topo.to_string();
          // Bytes per level: (f_l - 1) pieces of count * P_>l elements at the hop's bits.
          std::array<std::uint64_t, kNumLevels> expect{};
          for (int l = 0; l < kNumLevels; ++l) {
            const int f = topo.fanout(static_cast<Level>(l));
            if (f == 1) continue;
            const std::size_t piece = n * test::prod_above(topo, l);
            QuantSpec hq = c.q;
            hq.bits = bits.at(static_cast<Level>(l));
            expect[l] = (f - 1) * (hq.bits == 16 ? piece * s : quant_packed_bytes(piece, hq));
          }
          for (int l = 0; l < kNumLevels; ++l) EXPECT_EQ(got_traffic[l], expect[l]) << c.spec << " level " << l;
        }
      }
    }
  }
}

TEST(QuantizedCollectives, UnquantisedHopsGiveExactIntegerSums) {
  for (const Topology& topo : test::all_layouts(test::world_size())) {
    auto world = mpi_world(topo);
    Hierarchy hier(*world);
    const int w = world->size(), me = world->rank();
    const std::size_t n = 333;
    std::vector<float> send(n * w), recv(n);
    for (std::size_t i = 0; i < n * w; ++i) send[i] = static_cast<float>(test::value(me, i, DType::f32));
    hier.reduce_scatter_quantized(send.data(), recv.data(), n, DType::f32, ReduceOp::sum, HopBits{}, QuantSpec{});
    for (std::size_t i = 0; i < n; ++i) {
      double sum = 0;
      for (int r = 0; r < w; ++r) sum += test::value(r, me * n + i, DType::f32);
      ASSERT_EQ(recv[i], sum);
    }
  }
}

TEST(QuantizedCollectives, NonFiniteInputComesOutAsNaN) {
  const Topology topo = test::all_layouts(test::world_size()).back();
  auto world = mpi_world(topo);
  Hierarchy hier(*world);
  const int w = world->size(), me = world->rank();
  const std::size_t n = 512;
  std::vector<float> send(n * w, 1.0f), recv(n);
  if (me == 0) send[3] = INFINITY;  // element 3 of rank 0's chunk
  hier.reduce_scatter_quantized(send.data(), recv.data(), n, DType::f32, ReduceOp::avg, parse_hop_bits("package=8,node=8,world=8"), QuantSpec{});
  // Only rank 0 reduces the chunk holding the Inf. Once a hop has quantised
  // it, its whole block comes out NaN (with one rank there is no hop and
  // the Inf itself comes out); everything else is untouched.
  for (std::size_t i = 0; i < n; ++i) {
    if (me == 0 && i == 3) {
      ASSERT_FALSE(std::isfinite(recv[i]));
    } else if (me == 0 && i < 256 && w > 1) {
      ASSERT_TRUE(std::isnan(recv[i])) << i;
    } else {
      ASSERT_EQ(recv[i], 1.0f) << i;
    }
  }
}

TEST(QuantizedCollectives, HopBitsParse) {
  const HopBits b = parse_hop_bits("package=16,node=8,world=4");
  EXPECT_EQ(b.at(Level::package), 16);
  EXPECT_EQ(b.at(Level::node), 8);
  EXPECT_EQ(b.at(Level::world), 4);
  EXPECT_EQ(parse_hop_bits("world=8").to_string(), "package=16,node=16,world=8");
  EXPECT_THROW(parse_hop_bits("world=5"), ConfigError);
  EXPECT_THROW(parse_hop_bits("world"), ConfigError);
  EXPECT_THROW(parse_hop_bits("rack=8"), ConfigError);
}

}  // namespace
}  // namespace tierzero
