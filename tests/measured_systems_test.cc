// The measured presets (data/systems/*.toml from data/measured-collectives/):
// a flat collective at a measured point costs its measured time, rates
// between points are monotone where the measurements are, and the two-level
// prototype's large collectives are priced within 25% from the flat rows.
// Expected times are rows of data/measured-collectives/frontier-perlmutter.csv.
#include <gtest/gtest.h>

#include "tierzero/simulator.h"
#include "sim/traffic_model.h"

namespace tierzero {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

double ms(const char* system, Collective k, int ranks, double total_mib, Decomposition d) {
  const System sys = load_system(system);
  return 1e3 * collective_time(k, sys.topology(ranks), hop_spec(d), static_cast<std::uint64_t>(total_mib * kMiB / ranks), sys);
}

TEST(MeasuredSystems, PresetsAreKeyedByGroupsPerCollective) {
  const System f = load_system("frontier-rccl");
  EXPECT_EQ(f.topology(384).to_string(), "package=2,node=4,world=48");
  EXPECT_TRUE(f.link(Level::package).achieved.empty());  // no 2-GCD measurement: the link rate
  for (Level l : {Level::node, Level::world}) {
    const LinkSpec& link = f.link(l);
    EXPECT_TRUE(link.keyed_by_groups());
    EXPECT_EQ(link.latency_s, 0.0);  // inside the measured rates
    int ag = 0, rs = 0;
    for (const RatePoint& r : link.achieved) ag += r.collective == Collective::all_gather, rs += r.collective == Collective::reduce_scatter;
    // 11 sizes; one node, or 2 to 128 nodes (the all-gathers lack 32 GCDs at 1 GiB).
    EXPECT_EQ(ag, l == Level::node ? 11 : 76);
    EXPECT_EQ(rs, l == Level::node ? 11 : 77);
  }
  const System p = load_system("perlmutter-nccl");
  EXPECT_EQ(p.topology(16).to_string(), "node=4,world=4");
  EXPECT_EQ(p.link(Level::world).achieved.size(), 66u);  // all-gathers only: 16 to 512 GPUs, 11 sizes
}

// A flat collective at a measured (ranks, size) takes the measured time.
TEST(MeasuredSystems, AFlatCollectiveAtAMeasuredPointTakesItsMeasuredTime) {
  const auto ag = Collective::all_gather, rs = Collective::reduce_scatter;
  const auto flat = Decomposition::flat;
  EXPECT_NEAR(ms("frontier-rccl", ag, 16, 16, flat), 0.976, 0.976 * 1e-7);     // slurm-2985167: 2 nodes
  EXPECT_NEAR(ms("frontier-rccl", ag, 64, 16, flat), 21.301, 21.301 * 1e-7);    // slurm-2985165: the mid-size collapse
  EXPECT_NEAR(ms("frontier-rccl", ag, 64, 1024, flat), 14.480, 14.480 * 1e-7);
  EXPECT_NEAR(ms("frontier-rccl", rs, 8, 64, flat), 0.873, 0.873 * 1e-7);      // slurm-2990832: one node
  EXPECT_NEAR(ms("frontier-rccl", rs, 16, 1024, flat), 12.855, 12.855 * 1e-7);  // slurm-2990833
  EXPECT_NEAR(ms("perlmutter-nccl", ag, 16, 1024, flat), 16.353, 16.353 * 1e-7);  // nccl_nccl_4
  // Reduce-scatters on Perlmutter were not measured: they cost the all-gather's time.
  EXPECT_NEAR(ms("perlmutter-nccl", rs, 16, 1024, flat), 16.353, 16.353 * 1e-7);
}

// Between two measured sizes the time grows with the size, and between two
// measured node counts the rate moves from one measurement to the other.
TEST(MeasuredSystems, InterpolationIsMonotone) {
  double last = 0;
  for (double mib = 256; mib <= 512; mib *= 1.1) {
    const double t = ms("frontier-rccl", Collective::all_gather, 64, mib, Decomposition::flat);
    EXPECT_GT(t, last) << mib;
    last = t;
  }
  const LinkSpec& world = load_system("frontier-rccl").link(Level::world);
  const double shard = 64 * kMiB / 16;
  const double at2 = world.bandwidth_at({Collective::all_gather, 16, 2, shard});
  const double at4 = world.bandwidth_at({Collective::all_gather, 32, 4, shard});
  for (int nodes = 2; nodes <= 4; ++nodes) {
    const double r = world.bandwidth_at({Collective::all_gather, 8 * nodes, nodes, shard});
    EXPECT_GE(r, std::min(at2, at4));
    EXPECT_LE(r, std::max(at2, at4));
  }
}

// PCCL's two-level prototype (intra-node, then inter-node), priced from the
// flat rows alone, against its own measurements at large sizes
// (bench/measured_validation.py prints every point; docs/simulator.md).
TEST(MeasuredSystems, TheTwoLevelPrototypeAtLargeSizesFromTheFlatRows) {
  const auto two = Decomposition::two_level;
  struct Row { Collective k; int ranks; double mib, measured_ms; };
  for (const Row& r : {Row{Collective::all_gather, 16, 1024, 16.295}, Row{Collective::all_gather, 64, 1024, 20.799},
                       Row{Collective::all_gather, 128, 512, 10.725}, Row{Collective::reduce_scatter, 16, 1024, 21.787},
                       Row{Collective::reduce_scatter, 128, 512, 14.450}}) {
    const double ratio = ms("frontier-rccl", r.k, r.ranks, r.mib, two) / r.measured_ms;
    EXPECT_GT(ratio, 0.75) << collective_name(r.k) << " " << r.ranks;
    EXPECT_LT(ratio, 1.25) << collective_name(r.k) << " " << r.ranks;
  }
}

}  // namespace
}  // namespace tierzero
