#include "tierzero/system.h"

#include <gtest/gtest.h>

#include "tierzero/error.h"
#include "tierzero/simulator.h"

namespace tierzero {
namespace {

TEST(System, FrontierPreset) {
  const System s = load_system("frontier");
  EXPECT_DOUBLE_EQ(s.link(Level::package).bandwidth_Bps, 200e9);
  EXPECT_DOUBLE_EQ(s.link(Level::world).bandwidth_Bps, 12.5e9);
  EXPECT_DOUBLE_EQ(s.peak_flops, 191.5e12);
  const Topology t = s.topology(384);
  EXPECT_EQ(t.to_string(), "package=2,node=4,world=48");
  EXPECT_THROW(s.topology(12), TopologyError);
}

TEST(System, AllPresetsRoundTripThroughToml) {
  for (const std::string& name : system_preset_names()) {
    const System a = *system_preset(name);
    const System b = parse_system_toml(a.to_toml(), name + ".toml");
    EXPECT_EQ(b.name, a.name);
    ASSERT_EQ(b.links.size(), a.links.size());
    for (std::size_t i = 0; i < a.links.size(); ++i) {
      EXPECT_EQ(b.links[i].level, a.links[i].level);
      EXPECT_EQ(b.links[i].fanout, a.links[i].fanout);
      EXPECT_NEAR(b.links[i].bandwidth_Bps, a.links[i].bandwidth_Bps, 1e-3);
      EXPECT_NEAR(b.links[i].latency_s, a.links[i].latency_s, 1e-15);
    }
    EXPECT_NEAR(b.memory_bytes, a.memory_bytes, 1.0);
    EXPECT_NEAR(b.peak_flops, a.peak_flops, 1.0);
    EXPECT_NEAR(b.memory_bandwidth_Bps, a.memory_bandwidth_Bps, 1.0);
    DeviceSpec named = b.device;
    named.name = a.device.name;  // a file's own figures carry no preset name
    EXPECT_EQ(named, a.device) << name;
    EXPECT_EQ(b.collectives, a.collectives);
    EXPECT_EQ(b.overlap, a.overlap);
  }
  // GPU presets use NCCL/RCCL rings; the cpu preset tierzero's MPI communicator (direct).
  EXPECT_EQ(system_preset("frontier")->collectives, CollectiveLibrary::nccl);
  EXPECT_EQ(system_preset("cpu")->collectives, CollectiveLibrary::mpi);
}

// The cpu preset takes the levels a job has, as train runs them on one
// machine (the demo's package=2,node=2): package and node both shared memory
// at the one measured rate, the world 10 GbE; the fan-outs are the job's.
TEST(System, CpuPresetTakesTheJobsLevelsAsSharedMemory) {
  const System s = load_system("cpu");
  EXPECT_DOUBLE_EQ(s.link(Level::package).bandwidth_Bps, s.link(Level::node).bandwidth_Bps);
  EXPECT_DOUBLE_EQ(s.link(Level::package).latency_s, s.link(Level::node).latency_s);
  EXPECT_LT(s.link(Level::world).bandwidth_Bps, s.link(Level::node).bandwidth_Bps);
  try {
    s.topology(8);
    ADD_FAILURE() << "the cpu preset fixed its own fan-outs";
  } catch (const TopologyError& e) {
    EXPECT_NE(e.message().find("system 'cpu' does not fix the fan-out of package, node; give --topology"), std::string::npos) << e.message();
  }
  SimInput in;
  in.model = gpt_preset("gpt-tiny");
  in.system = s;
  in.ranks = 8;
  in.topology_spec = "package=2,node=2";
  EXPECT_EQ(in.topology().to_string(), "package=2,node=2,world=2");
  in.plan = fit_to(strategy_plan("hier3"), in.topology());
  const SimResult r = simulate(in);
  EXPECT_GT(r.bytes_per_level[static_cast<int>(Level::package)], 0u);
  EXPECT_GT(r.comm_time_s[static_cast<int>(Level::package)], 0.0);
  in.topology_spec = "node=4";  // a job without a package level prices none
  in.plan = fit_to(strategy_plan("hier3"), in.topology());
  EXPECT_EQ(simulate(in).bytes_per_level[static_cast<int>(Level::package)], 0u);
}

void expect_error(const std::string& text, const char* fragment) {
  try {
    parse_system_toml(text, "sys.toml");
    FAIL() << "accepted: " << text;
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find(fragment), std::string::npos) << e.message();
  }
}

// A device preset's figures come from data/devices, based_on chains
// included; a system file may start from one; each figure keeps its source.
TEST(System, DevicePresetsAndBasedOn) {
  for (const std::string& name : device_preset_names()) {
    const System d = device_preset(name);
    EXPECT_EQ(d.device.name, name);
    EXPECT_GT(d.peak_flops, 0) << name;
    EXPECT_GT(d.memory_bandwidth_Bps, 0) << name;
    EXPECT_FALSE(d.device.source_of("gemm_efficiency").empty()) << name << ": gemm_efficiency has no source";
  }
  const System a100 = device_preset("a100-80gb"), a40 = device_preset("a100-40gb"), h200 = device_preset("h200");
  EXPECT_DOUBLE_EQ(a40.memory_bytes, 40e9);
  EXPECT_DOUBLE_EQ(a40.device.gemm_efficiency, a100.device.gemm_efficiency);  // one chip
  EXPECT_EQ(a40.device.attention, a100.device.attention);
  EXPECT_DOUBLE_EQ(h200.memory_bandwidth_Bps, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.device.gemm_efficiency, device_preset("h100-sxm").device.gemm_efficiency);
  EXPECT_NE(h200.device.memory_efficiency, device_preset("h100-sxm").device.memory_efficiency);  // overridden, with its own source
  EXPECT_NE(h200.device.source_of("memory_efficiency"), device_preset("h100-sxm").device.source_of("memory_efficiency"));
  const System s = parse_system_toml("based_on = 'h100-sxm'\nmemory_gb = 94\n[device]\ngemm_efficiency = 0.5\n"
                                     "gemm_efficiency_source = 'my own GEMM benchmark'\n[[level]]\nname='world'\nbandwidth_gbs=1\nlatency_us=1\n",
                                     "sys.toml");
  EXPECT_DOUBLE_EQ(s.memory_bytes, 94e9);
  EXPECT_DOUBLE_EQ(s.peak_flops, 989e12);
  EXPECT_DOUBLE_EQ(s.device.gemm_efficiency, 0.5);
  EXPECT_EQ(s.device.source_of("gemm_efficiency"), "my own GEMM benchmark");
  EXPECT_EQ(s.device.sm_count, 132);
  EXPECT_THROW(device_preset("tpu-v9"), ConfigError);
}

TEST(System, RejectsBadFiles) {
  const std::string ok_level = "[[level]]\nname='world'\nbandwidth_gbs=1\nlatency_us=1\n";
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\ncolor='red'\n" + ok_level, "unknown key 'color'");
  expect_error("peak_tflops=1\n" + ok_level, "needs memory_gb, peak_tflops and memory_bandwidth_gbs (or based_on");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n", "at least one [[level]]");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[[level]]\nname='world'\nbandwidth_gbs=1\n", "needs bandwidth_gbs and latency_us");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[[level]]\nname='node'\nbandwidth_gbs=1\nlatency_us=1\n", "last level must be 'world'");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[[level]]\nname='world'\nbandwidth_gbs=-1\nlatency_us=1\n", "bandwidth must be > 0");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\ncollectives='tree'\n" + ok_level, "collectives must be");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[device]\nwarp_size=32\n" + ok_level, "[device]: unknown key 'warp_size'");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[device]\ngemm_efficiency=1.5\n" + ok_level, "gemm_efficiency must be between");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[device]\npeak_fp8_tflops=100\n" + ok_level, "needs gemm_fp8_efficiency");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[device]\n[[device.attention]]\nforward=0.5\nbackward=0.5\nhalf_seq=1\n" + ok_level,
               "needs implementation");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[device]\n[[device.attention]]\nimplementation='flash2'\nforward=0.5\n" + ok_level,
               "needs forward, backward and half_seq");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[device]\nsm_count_source=3\n" + ok_level, "sm_count_source must be a string");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[device]\nwarp_size_source='x'\n" + ok_level, "unknown key 'warp_size_source'");
  expect_error("based_on='nope'\n" + ok_level, "unknown device 'nope'");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\noverlap=1.5\n" + ok_level, "overlap must be in [0, 1]");
  expect_error("memory_gb=[\n", "sys.toml:");
  expect_error("memory_gb=1\npeak_tflops=inf\nmemory_bandwidth_gbs=1\n" + ok_level, "sys.toml: peak_tflops must be a finite number");
  expect_error("memory_gb=nan\npeak_tflops=1\nmemory_bandwidth_gbs=1\n" + ok_level, "sys.toml: memory_gb must be a finite number");
  expect_error("memory_gb=0\npeak_tflops=1\nmemory_bandwidth_gbs=1\n" + ok_level, "memory_gb must be between 1e-06 and 1e+09");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[[level]]\nname='world'\nfanout=4294967298\nbandwidth_gbs=1\nlatency_us=1\n",
               "fanout must be between 0 and 16777216");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\noverlap_reduce=-0.1\n" + ok_level, "overlap_reduce must be in [0, 1]");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\ncall_overhead_us=-3\n" + ok_level, "call_overhead_us must be in [0, 1e6)");
  EXPECT_THROW(load_system("no-such-system"), ConfigError);
}

// Achieved rates: log-linear in bytes within a participant count, then in
// participants, clamped at the edges; the link rate without a table.
TEST(System, AchievedBandwidthInterpolatesOverParticipantsAndBytes) {
  LinkSpec l;
  l.bandwidth_Bps = 7e9;
  const auto at = [&](int participants, double bytes) { return l.bandwidth_at({Collective::all_gather, participants, 0, bytes}); };
  EXPECT_EQ(at(64, 1e6), 7e9);
  l.achieved = {{2, 1e3, 1e9}, {2, 1e5, 3e9}, {8, 1e3, 0.5e9}, {8, 1e5, 1.5e9}};
  EXPECT_NEAR(at(2, 1e4), 2e9, 1);      // halfway in log(bytes)
  EXPECT_NEAR(at(8, 1e4), 1e9, 1);
  EXPECT_NEAR(at(4, 1e4), 1.5e9, 1);    // halfway in log(participants) between 2 and 8
  EXPECT_NEAR(at(16, 1e7), 1.5e9, 1);   // clamped: more ranks, larger shards than measured
  EXPECT_NEAR(at(2, 10), 1e9, 1);
  // Points of no kind price every kind, the all-reduce too.
  EXPECT_NEAR(l.bandwidth_at({Collective::all_reduce, 2, 0, 1e4}), 2e9, 1);
  EXPECT_NEAR(l.bandwidth_at({Collective::all_to_all, 8, 0, 1e5}), 1.5e9, 1);
  const std::string text = "memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[[level]]\nname='world'\nbandwidth_gbs=7\nlatency_us=1\n"
                           "achieved=[{participants=2, bytes=1000, bandwidth_gbs=1}, {participants=8, bytes=1e5, bandwidth_gbs=1.5}]\n";
  const System s = parse_system_toml(text, "t");
  ASSERT_EQ(s.links[0].achieved.size(), 2u);
  EXPECT_EQ(parse_system_toml(s.to_toml(), "back").links[0].achieved, s.links[0].achieved);
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[[level]]\nname='world'\nbandwidth_gbs=7\nlatency_us=1\n"
               "achieved=[{participants=1, bytes=1000, bandwidth_gbs=1}]\n",
               "level[0].achieved[0]: participants must be 2 to 16777216");
  expect_error("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[[level]]\nname='world'\nbandwidth_gbs=7\nlatency_us=1\nachieved=3\n",
               "achieved must be an array");
}

// Points per kind, keyed by groups: each kind reads its own points, an
// all-reduce is a reduce-scatter then an all-gather (the harmonic mean of
// their rates), a kind without points reads the nearest measured kind.
TEST(System, AchievedBandwidthPerCollectiveAndGroups) {
  LinkSpec l;
  l.bandwidth_Bps = 100e9;
  const auto ag = Collective::all_gather, rs = Collective::reduce_scatter;
  l.achieved = {{16, 1e6, 4e9, ag, 2}, {16, 1e7, 8e9, ag, 2}, {64, 1e6, 2e9, ag, 8}, {64, 1e7, 4e9, ag, 8}, {16, 1e6, 6e9, rs, 2}};
  ASSERT_TRUE(l.keyed_by_groups());
  // A table point is returned exactly, whatever the participants (the key is the groups spanned).
  EXPECT_EQ(l.bandwidth_at({ag, 16, 2, 1e6}), 4e9);
  EXPECT_EQ(l.bandwidth_at({ag, 2, 2, 1e7}), 8e9);
  EXPECT_EQ(l.bandwidth_at({ag, 999, 8, 1e6}), 2e9);
  EXPECT_NEAR(l.bandwidth_at({ag, 32, 4, 1e6}), 3e9, 1);  // halfway in log(groups) between 2 and 8
  EXPECT_EQ(l.bandwidth_at({rs, 16, 2, 1e6}), 6e9);
  EXPECT_EQ(l.bandwidth_at({rs, 16, 2, 1e9}), 6e9);  // clamped at its one point
  EXPECT_NEAR(l.bandwidth_at({Collective::all_reduce, 16, 2, 1e6}), 2 / (1 / 6e9 + 1 / 4e9), 1);
  EXPECT_EQ(l.bandwidth_at({Collective::all_to_all, 16, 2, 1e6}), 4e9);  // the all-gather's
  // Monotone in bytes and in groups between the points.
  double last = 0;
  for (double b = 1e6; b <= 1e7; b *= 1.2) {
    const double v = l.bandwidth_at({ag, 16, 2, b});
    EXPECT_GE(v, last);
    last = v;
  }
  last = 1e99;
  for (int g = 2; g <= 8; ++g) {
    const double v = l.bandwidth_at({ag, 8 * g, g, 3e6});
    EXPECT_LE(v, last);
    last = v;
  }
  const std::string head = "memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\n[[level]]\nname='world'\nbandwidth_gbs=7\nlatency_us=1\n";
  const System s = parse_system_toml(head + "achieved=[{collective='reduce_scatter', participants=16, groups=2, bytes=1e6, bandwidth_gbs=6}]\n", "t");
  EXPECT_EQ(s.links[0].achieved.front(), (RatePoint{16, 1e6, 6e9, rs, 2}));
  EXPECT_EQ(parse_system_toml(s.to_toml(), "back").links[0].achieved, s.links[0].achieved);
  expect_error(head + "achieved=[{collective='broadcast', participants=2, bytes=1, bandwidth_gbs=1}]\n",
               "level[0].achieved[0]: unknown collective 'broadcast'");
  expect_error(head + "achieved=[{participants=4, groups=8, bytes=1, bandwidth_gbs=1}]\n", "groups must be 2 to participants");
  expect_error(head + "achieved=[{participants=4, groups=2, bytes=1, bandwidth_gbs=1}, {participants=4, bytes=1, bandwidth_gbs=1}]\n",
               "level[0].achieved[1]: a level's points are keyed either all by groups or none");
}

// "overlap" sets every kind, the per-kind keys override it; both survive a round trip with the call overhead.
TEST(System, OverlapPerKindAndCallOverhead) {
  const std::string level = "[[level]]\nname='world'\nbandwidth_gbs=1\nlatency_us=1\n";
  const System s = parse_system_toml("memory_gb=1\npeak_tflops=1\nmemory_bandwidth_gbs=1\noverlap=0.25\noverlap_backward=0.5\ncall_overhead_us=40\n" + level, "s");
  EXPECT_EQ(s.overlap, (Overlap{0.25, 0.5, 0.25}));
  EXPECT_NEAR(s.call_overhead_s, 40e-6, 1e-15);
  const System back = parse_system_toml(s.to_toml(), "back");
  EXPECT_EQ(back.overlap, s.overlap);
  EXPECT_NEAR(back.call_overhead_s, s.call_overhead_s, 1e-15);
  EXPECT_EQ(system_preset("frontier")->overlap, (Overlap{1, 1, 1}));
}

}  // namespace
}  // namespace tierzero
