// The simulator: closed-form compute, memory and zero3 traffic per level,
// and the ordering of the strategies' network time on Frontier.
#include "sim/hop_time.h"
#include "tierzero/simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "tierzero/error.h"
#include "tierzero/planner.h"

namespace tierzero {
namespace {

SimInput frontier(const char* strategy, int ranks) {
  SimInput in;
  in.model = gpt_preset("gpt-20b");
  in.system = load_system("frontier");
  in.ranks = ranks;
  in.micro_batch = 1;
  in.plan = fit_to(strategy_plan(strategy), in.topology());
  return in;
}

// The compute is the op list priced (sim_ops_test.cc checks the op list
// and the pricing): forward and backward by pass, the optimizer's update beside
// them; recomputation adds a forward's worth of the blocks' work.
TEST(Simulator, ComputeIsTheOpListsPassesAndTheOptimizer) {
  SimInput in = frontier("zero3", 8);
  const SimResult r = simulate(in);
  EXPECT_NEAR(r.compute_s, r.forward_s + r.backward_s + r.optimizer_s, 1e-12);
  EXPECT_NEAR(r.forward_s + r.backward_s, r.gemm_s + r.attention_s + r.memory_ops_s, 1e-12);
  EXPECT_GT(r.optimizer_s, 0.0);
  EXPECT_EQ(r.recompute_s, 0.0);
  in.recompute = Recompute{Recompute::Kind::full};
  const SimResult rc = simulate(in);
  EXPECT_NEAR(rc.forward_s, r.forward_s, 1e-12);
  EXPECT_GT(rc.recompute_s, 0.0);
  EXPECT_LT(rc.recompute_s, r.forward_s);  // the blocks' forward, not the embedding's or the head's
  EXPECT_NEAR(rc.backward_s, r.backward_s + rc.recompute_s, 1e-12);
  // Tokens per device per second and model TFLOPS are two views of the step time.
  EXPECT_NEAR(r.tokens_per_s_per_device, 2048 / r.step_time_s, 1e-9);
  EXPECT_NEAR(r.tflops_per_device, in.model.flops_per_token(2048) * 2048 / r.step_time_s / 1e12, 1e-9);
}

TEST(Simulator, MemoryFollowsThePartitionFormulas) {
  const SimInput in = frontier("zero3", 384);
  const SimResult r = simulate(in);
  std::map<std::string, double> m(r.memory_bytes.begin(), r.memory_bytes.end());
  const double n = static_cast<double>(in.model.num_params());
  EXPECT_NEAR(m["optim"], 12 * n / 384, 12 * 50.0);  // plus at most one element of padding per unit
  EXPECT_NEAR(m["params"], 2 * n / 384, 2 * 50.0);
  EXPECT_EQ(m["bwd_params"], 0.0);
  const SimResult h = simulate(frontier("hier3", 384));
  std::map<std::string, double> mh(h.memory_bytes.begin(), h.memory_bytes.end());
  EXPECT_NEAR(mh["bwd_params"], 2 * n / 2, 2 * 50.0);  // the package copy: half the model per GCD
  EXPECT_GT(simulate(frontier("ddp", 8)).memory_total, 64e9);
  EXPECT_FALSE(simulate(frontier("ddp", 8)).fits);
}

// On a CPU rank Open MPI's non-blocking reduce-scatter copies its send
// buffer (rank 0: once in a group of two): a gradient reduction over two
// hops of two copies the whole bucket on its first hop when whole; with
// pipelined hops every hop has a chunk's call in flight, the first hop's
// sending the chunk's share of every rank (4 x c) and the second half that,
// for each of the reducer's two buffers: 2 x (4c + 2c) = 12c beyond the
// device's runtime.
TEST(Simulator, OpenMpisReduceCopiesAreTheHopPlansCalls) {
  SimInput in;
  in.model = gpt_preset("gpt-tiny");
  in.system = load_system("cpu");
  in.ranks = 4;
  in.topology_spec = "package=2,node=2";
  in.plan = fit_to(strategy_plan("zero3"), in.topology());
  in.plan.reduce = Decomposition::three_level;
  in.plan.bucket_bytes = 64 << 10;  // buckets of 4,096 elements per member or more: at least two chunks of each size below
  auto library = [&](std::size_t chunk) {
    in.plan.hop_chunk_bytes = chunk;
    const SimResult r = simulate(in);
    return std::map<std::string, double>(r.memory_bytes.begin(), r.memory_bytes.end())["runtime"] - in.system.device.runtime_bytes;
  };
  const double whole = library(0);
  EXPECT_NEAR(library(4096), 12 * 4096.0, 1e-3);
  EXPECT_NEAR(library(8192), 12 * 8192.0, 1e-3);
  EXPECT_GE(whole, 2 * 4096 * 16.0);  // the two largest buckets, whole: each at least 4,096 elements x 4 members x 4 bytes
  EXPECT_EQ(whole, library(std::size_t{1} << 40));  // a chunk beyond the message runs it whole
}

// The optimizer offloaded (ZeRO-Offload / ZeRO-Infinity): its K = 12 bytes
// per parameter of the shard (fp32 master, m and v: the ZeRO papers'
// mixed-precision Adam, Rajbhandari et al. 2020, section 3.1, and 2021)
// leave the device for host memory or NVMe files, and the step pays for
// moving and updating them, in closed form from the system's rates.
// Llama 3 70B on 64 GPUs of DGX H100 nodes, one 2048-token sequence per rank.
SimInput llama70b_on_dgx_h100() {
  SimInput in;
  in.model = gpt_preset("llama3-70b");
  in.system = load_system("dgx-h100");
  in.ranks = 64;
  in.micro_batch = 1;
  in.seq_len = 2048;
  return in;
}

TEST(Simulator, AnOffloadedOptimizerLeavesTheDeviceAndCostsItsTransfers) {
  SimInput in = llama70b_on_dgx_h100();
  in.recompute = Recompute{Recompute::Kind::full};
  in.plan = fit_to(strategy_plan("zero3"), in.topology());
  const SimResult dev = simulate(in);
  std::map<std::string, double> m(dev.memory_bytes.begin(), dev.memory_bytes.end());
  const double n = static_cast<double>(in.model.num_params()), optim = m["optim"];
  EXPECT_NEAR(optim, 12 * n / 64, 12 * 200.0);  // plus at most one element of padding per unit
  EXPECT_EQ(dev.host_bytes + dev.file_bytes + dev.offload_s, 0.0);
  const double shard = optim / 12;
  const System& sys = in.system;
  in.plan.optim_offload.device = Offload::cpu;
  const SimResult cpu = simulate(in);
  std::map<std::string, double> mc(cpu.memory_bytes.begin(), cpu.memory_bytes.end());
  EXPECT_EQ(mc["optim"], 0.0);
  EXPECT_EQ(cpu.host_bytes, optim);
  EXPECT_NEAR(cpu.memory_total, dev.memory_total - optim, 1.0);
  // 16-bit gradients down and parameters up over PCIe, the update at host memory bandwidth.
  EXPECT_NEAR(cpu.offload_s, 2 * 2 * shard / sys.host_link_Bps + 28 * shard / sys.host_memory_Bps, 1e-9);
  EXPECT_EQ(cpu.optimizer_s, 0.0);  // the update runs on the host, in offload_s
  EXPECT_NEAR(cpu.step_time_s, dev.step_time_s - dev.optimizer_s + cpu.offload_s, 1e-9);
  in.plan.optim_offload.device = Offload::nvme;
  in.plan.optim_offload.nvme_path = "/nvme";
  const SimResult nvme = simulate(in);
  EXPECT_EQ(nvme.file_bytes, optim);
  EXPECT_LT(nvme.host_bytes, optim / 10);  // two buffers of the largest unit
  EXPECT_NEAR(nvme.offload_s, cpu.offload_s + 24 * shard / sys.nvme_Bps, 1e-9);
  in.system.nvme_Bps = 0;
  EXPECT_THROW(simulate(in), ConfigError);  // no rate to price it with
}

// Offloaded parameters: their shard and the hpZ copy leave the device; the
// step pays each micro-batch's reads and the update's write over the host
// link, and the shard's at the NVMe rate too.
TEST(Simulator, OffloadedParametersLeaveTheDeviceAndCostTheirReads) {
  SimInput in = llama70b_on_dgx_h100();
  in.recompute = Recompute{Recompute::Kind::full};
  in.grad_accum = 2;
  in.plan = fit_to(strategy_plan("zeropp"), in.topology());
  const SimResult dev = simulate(in);
  std::map<std::string, double> m(dev.memory_bytes.begin(), dev.memory_bytes.end());
  const double n = static_cast<double>(in.model.num_params()), shard = m["params"], copy = m["bwd_params"];
  EXPECT_NEAR(shard, 2 * n / 64, 2 * 200.0);  // bf16, plus at most one element of padding per unit
  EXPECT_NEAR(copy, 2 * n / 8, 2 * 200.0);    // hpZ: partitioned over the node's 8 GPUs
  const System& sys = in.system;
  const double embed = 2.0 * static_cast<double>(in.model.vocab) * in.model.channels, embed_shard = embed / 64, embed_copy = embed / 8;
  in.plan.param_offload.device = Offload::cpu;
  const SimResult cpu = simulate(in);
  std::map<std::string, double> mc(cpu.memory_bytes.begin(), cpu.memory_bytes.end());
  EXPECT_EQ(mc["params"] + mc["bwd_params"], 0.0);
  EXPECT_NEAR(cpu.memory_total, dev.memory_total - shard - copy, 1.0);
  EXPECT_EQ(cpu.host_bytes, shard + copy);
  // Per micro-batch the shard read for forward, the copy written in forward and read in backward but for the
  // embedding (its gradient needs no weights); the update writes the shard.
  EXPECT_NEAR(cpu.offload_s, (2 * shard + 2 * (2 * copy - embed_copy) + shard) / sys.host_link_Bps, 1e-6);
  EXPECT_NEAR(cpu.step_time_s, dev.step_time_s + cpu.offload_s, 1e-9);
  in.plan.param_offload = {Offload::nvme, "/nvme", 4};
  const SimResult nvme = simulate(in);
  EXPECT_EQ(nvme.file_bytes, shard);
  EXPECT_GT(nvme.host_bytes, copy);
  EXPECT_LT(nvme.host_bytes, copy + shard / 10);  // four buffers of the largest unit
  EXPECT_NEAR(nvme.offload_s, cpu.offload_s + (2 * shard + shard) / sys.nvme_Bps, 1e-6);
  in.plan = fit_to(strategy_plan("zero3"), in.topology());  // no hpZ copy: backward reads the shard again
  in.plan.param_offload.device = Offload::cpu;
  EXPECT_NEAR(simulate(in).offload_s, (2 * (2 * shard - embed_shard) + shard) / sys.host_link_Bps, 1e-6);
}

TEST(Planner, ProposesAnOffloadedOptimizerWhenNothingElseFits) {
  const SimInput in = llama70b_on_dgx_h100();
  PlanSearchOptions o;
  o.memory_limit = 80e9;
  const auto roomy = search_plans(in, o);
  ASSERT_FALSE(roomy.empty());
  for (const PlanCandidate& c : roomy) EXPECT_EQ(c.plan.optim_offload.device, Offload::none) << "offload only when nothing fits";
  o.memory_limit = 46e9;  // no plan keeps the states, buffers and activations on a 46 GB device
  const auto tight = search_plans(in, o);
  ASSERT_FALSE(tight.empty());
  bool cpu = false, nvme = false;
  for (const PlanCandidate& c : tight) {
    EXPECT_NE(c.plan.optim_offload.device, Offload::none);
    EXPECT_LE(c.result.memory_total, 46e9);
    EXPECT_GT(c.result.offload_s, 0.0);
    cpu = cpu || c.plan.optim_offload.device == Offload::cpu, nvme = nvme || c.plan.optim_offload.device == Offload::nvme;
  }
  EXPECT_TRUE(cpu && nvme);
  EXPECT_EQ(tight.front().plan.optim_offload.device, Offload::cpu) << "host memory is faster than NVMe on a DGX H100";
  for (const PlanCandidate& c : tight) EXPECT_FALSE(c.plan.param_offload.offloaded()) << "the optimizer's offload was enough";
}

TEST(Planner, ProposesOffloadedParametersWhenTheOptimizersOffloadIsNotEnough) {
  const SimInput in = llama70b_on_dgx_h100();
  PlanSearchOptions o;
  o.memory_limit = 36e9;  // the optimizer offloaded, the 16-bit shards, gradients, buffers and activations still exceed it
  o.top = 200;
  const auto found = search_plans(in, o);
  ASSERT_FALSE(found.empty());
  bool cpu = false, nvme = false;
  for (const PlanCandidate& c : found) {
    EXPECT_TRUE(c.plan.param_offload.offloaded() && c.plan.optim_offload.offloaded()) << c.plan.describe();
    EXPECT_TRUE(c.plan.params.has_value()) << "offloaded parameters are partitioned";
    EXPECT_LE(c.result.memory_total, 36e9);
    cpu = cpu || c.plan.param_offload.device == Offload::cpu, nvme = nvme || c.plan.param_offload.device == Offload::nvme;
  }
  EXPECT_TRUE(cpu && nvme);
  EXPECT_EQ(found.front().plan.param_offload.device, Offload::cpu) << "host memory is faster than NVMe on a DGX H100";
}

// zero3 on 64 GCDs (package 2 x node 4 x world 8), in closed form from the
// counting rule of docs/algorithms.md, for rank 0: per step, flat
// collectives over all 64 ranks of every unit's padded bf16 shard: the
// forward gathers (every unit), the backward gathers (all but the
// embedding, which forward keeps) and the gradient reduce-scatters (every
// unit). A flat collective of b bytes per peer charges level l with
// b x prod(fan-outs below l) x (f_l - 1). Then the loss/norm all-reduce of
// 2 floats: rank 0 owns element 0, rank 1 element 1, so peer j sends
// (1 + [j == 1]) x 4 bytes. The engine is tested against the same traffic
// model on real runs (engine_mpi_test).
TEST(Simulator, Zero3TrafficPerLevelInClosedForm) {
  const SimInput in = frontier("zero3", 64);
  const GptLayout layout(in.model);
  std::uint64_t all = 0, embed = 0;  // elements of the padded shards
  for (std::size_t u = 0; u < layout.units().size(); ++u) {
    const std::uint64_t s = (layout.units()[u].numel + 63) / 64;
    all += s;
    if (static_cast<int>(u) == layout.embed_unit()) embed = s;
  }
  const std::uint64_t per_peer = (3 * all - embed) * 2;
  const std::array<std::uint64_t, kNumLevels> below = {1, 2, 8}, fan = {2, 4, 8}, control = {8, 6 * 4, 56 * 4};
  const auto got = simulate(in).bytes_per_level;
  for (int l = 0; l < kNumLevels; ++l)
    EXPECT_EQ(got[l], per_peer * below[l] * (fan[l] - 1) + control[l]) << level_name(static_cast<Level>(l));
}

TEST(Simulator, NetworkBytesOrderTheStrategiesOnFrontier) {
  const auto world_bytes = [](const char* s, int ranks) { return simulate(frontier(s, ranks)).bytes_per_level[2]; };
  EXPECT_LT(world_bytes("hier3", 384), world_bytes("zeropp", 384));
  EXPECT_LT(world_bytes("zeropp", 384), world_bytes("zero3", 384));
  EXPECT_EQ(world_bytes("hier3", 8), 0u);  // one node: no network
  EXPECT_EQ(simulate(frontier("hier3", 8)).comm_time_s[2], 0.0);
}

// Frontier's links (presets.cc): package 200, node 50, world 12.5 GB/s per GCD;
// latencies 2, 4, 10 us; fan-outs package 2, node 4. A ring's 15 steps: 8 x
// (2 - 1) inside packages, 2 x (4 - 1) between them inside nodes, 1 between
// the nodes, each at its level's latency (NCCL's model).
TEST(HopTime, ARingIsLimitedByItsSlowestChainLink) {
  const System sys = load_system("frontier");
  const Topology topo = sys.topology(16);  // package=2,node=4,world=2
  HopTransfer flat{Phase::forward, Collective::all_gather, 16, {1'000'000, 6'000'000, 8'000'000}, 0};
  const HopTime t = hop_time(flat, topo, sys);
  // Chain rates: package 1 x 200, node 2 x 50 = 100, world 8 x 12.5 = 100 GB/s: 15 MB at 100 GB/s.
  EXPECT_NEAR(t.transfer_s, 15e6 / 100e9, 1e-12);
  EXPECT_NEAR(t.latency_s, 8 * 2e-6 + 6 * 4e-6 + 1 * 10e-6, 1e-12);
  EXPECT_EQ(t.latency_level, 1);  // the node level's 24 us are the most
  // The world hop of a hierarchical gather: 8 chains share the node's NICs, 12.5 GB/s each.
  HopTransfer cross{Phase::forward, Collective::all_gather, 2, {0, 0, 1'000'000}, 0};
  EXPECT_NEAR(hop_time(cross, topo, sys).transfer_s, 1e6 / 12.5e9, 1e-12);
  EXPECT_EQ(hop_time(cross, topo, sys).bottleneck, 2);
}

TEST(HopTime, OpenMpiGathersDirectlyAndReducesThroughOneRank) {
  System sys = load_system("frontier");
  const Topology topo = sys.topology(16);
  HopTransfer flat{Phase::forward, Collective::all_gather, 16, {1'000'000, 6'000'000, 8'000'000}, 0};
  HopTransfer a2a = flat;
  a2a.collective = Collective::all_to_all;  // direct even under NCCL
  EXPECT_NEAR(hop_time(a2a, topo, sys).transfer_s, 8e6 / 12.5e9, 1e-12);
  sys.collectives = CollectiveLibrary::mpi;
  EXPECT_NEAR(hop_time(flat, topo, sys).transfer_s, 8e6 / 12.5e9, 1e-12);  // max(1/200, 6/50, 8/12.5) ms
  HopTransfer ar = flat;
  ar.collective = Collective::all_reduce;  // M = 8 MB: recursive halving and doubling over 16 ranks
  EXPECT_NEAR(hop_time(ar, topo, sys).transfer_s, 8e6 / 200e9 + 6e6 / 50e9 + 1e6 / 12.5e9, 1e-12);
  System ring = sys;
  ring.collectives = CollectiveLibrary::nccl;  // NCCL: a ring
  EXPECT_NEAR(hop_time(ar, topo, ring).transfer_s, 15e6 / 100e9, 1e-12);
  // Reduce-scatter of M = 16 MB (1 MB pieces): binomial reduce, 1 round across package
  // (M / 200 GB/s), 2 across node (M / (2 x 50)), 1 across world (M / (8 x 12.5)),
  // then the scatter's slowest level, 8 MB / (8 x 12.5 GB/s).
  HopTransfer rs = flat;
  rs.collective = Collective::reduce_scatter;
  EXPECT_NEAR(hop_time(rs, topo, sys).transfer_s, 16e6 / 200e9 + 2 * 16e6 / 100e9 + 16e6 / 100e9 + 8e6 / 100e9, 1e-12);
}

// A level's achieved-rate table replaces its link rate for the hop's size.
TEST(HopTime, UsesTheAchievedRateForTheHopsParticipantsAndShard) {
  const System sys = load_system("frontier");
  const Topology topo = sys.topology(16);
  HopTransfer cross{Phase::forward, Collective::all_gather, 2, {0, 0, 1'000'000}, 0};
  const double ideal = hop_time(cross, topo, sys).transfer_s;
  System measured = sys;
  measured.links.back().achieved = {{2, 1e6, 12.5e9 / 4}, {64, 1e6, 12.5e9 / 8}};  // a 1 MB shard among 2: a quarter of the link
  EXPECT_NEAR(hop_time(cross, topo, measured).transfer_s, 4 * ideal, 1e-12);
}

// Physical bytes into a package and a node, 2 x 2 x 2, a flat collective of
// s = 1 MB shards: direct (every rank hears from outside itself), ring (one
// chain enters each group), tree (the reduce's crossings, then the scatter).
TEST(HopIngress, DirectRingAndTreeInClosedForm) {
  System nccl = load_system("frontier");
  System mpi = nccl;
  mpi.collectives = CollectiveLibrary::mpi;
  const Topology topo = Topology::parse("package=2,node=2,world=2", 8);
  const double s = 1e6;
  const HopTransfer gather{Phase::forward, Collective::all_gather, 8, {1'000'000, 2'000'000, 4'000'000}, 0};
  EXPECT_DOUBLE_EQ(hop_ingress(gather, topo, mpi, Level::node), 4 * 4 * s);     // 4 ranks x 4 shards from the other node
  EXPECT_DOUBLE_EQ(hop_ingress(gather, topo, mpi, Level::package), 2 * 6 * s);  // 2 ranks x 6 shards from other packages
  EXPECT_DOUBLE_EQ(hop_ingress(gather, topo, nccl, Level::node), 7 * s);        // one ring, its entry link carries 7 shards
  EXPECT_DOUBLE_EQ(hop_ingress(gather, topo, nccl, Level::package), 7 * s);
  const HopTransfer world_hop{Phase::forward, Collective::all_gather, 2, {0, 0, 4'000'000}, 0};
  EXPECT_DOUBLE_EQ(hop_ingress(world_hop, topo, nccl, Level::node), 4 * 4 * s);  // 4 chains of 2 ranks, one per rank of the node
  EXPECT_DOUBLE_EQ(hop_ingress(world_hop, topo, nccl, Level::package), 2 * 4 * s);
  const HopTransfer inside{Phase::forward, Collective::all_gather, 2, {1'000'000, 0, 0}, 0};
  EXPECT_EQ(hop_ingress(inside, topo, nccl, Level::package), 0.0);  // never leaves the package
  // Reduce-scatter, M = 8 MB: the world round sends M once between the 2
  // nodes (M / 2 per node), then the root's 4 pieces of 1 MB reach the other node (2 MB per node).
  HopTransfer rs = gather;
  rs.collective = Collective::reduce_scatter;
  EXPECT_DOUBLE_EQ(hop_ingress(rs, topo, mpi, Level::node), 8 * s / 2 + 4 * s / 2);
  // Packages: 3 crossings of M (1 across world, 2 across node) over 4 packages; 6 of 8 pieces cross, 1.5 per package.
  EXPECT_DOUBLE_EQ(hop_ingress(rs, topo, mpi, Level::package), 8 * s * 3 / 4 + 2 * s * 3 / 4);
  // Open MPI's all-reduce of M = 8 MB over 8 ranks, recursive halving and
  // doubling: M / 8 each way across the world (partners 4 apart), M / 4
  // across node, M / 2 inside the package. A node hears 4 x 2 MB = M, a
  // package 2 x 6 MB; with NCCL, a ring, each group's one chain carries 14 MB.
  const HopTransfer ar{Phase::reduce, Collective::all_reduce, 8, {2'000'000, 4'000'000, 8'000'000}, 0};
  EXPECT_DOUBLE_EQ(hop_ingress(ar, topo, mpi, Level::node), 8 * s);
  EXPECT_DOUBLE_EQ(hop_ingress(ar, topo, mpi, Level::package), 12 * s);
  EXPECT_DOUBLE_EQ(hop_ingress(ar, topo, nccl, Level::node), 14 * s);
  const HopTime t = hop_time(ar, topo, mpi);  // the steps one after another, each rank over its own link
  EXPECT_NEAR(t.transfer_s, 8 * s / 200e9 + 4 * s / 50e9 + 2 * s / 12.5e9, 1e-15);
  EXPECT_NEAR(t.latency_s, 2 * 3 * 10e-6, 1e-15);
}

// Forward gathers hide under the forward's compute, backward gathers and
// reductions under the backward's, each kind by the system's overlap times
// the engine's; what hides slows the compute beside it by the engine's
// overlap_slowdown.
TEST(Simulator, OverlapHidesCommunicationUnderCompute) {
  SimInput in = frontier("zero3", 384);
  in.system.links.back().bandwidth_Bps /= 20;  // make the network matter
  in.system.overlap = {0.0, 0.0, 0.0};
  const SimResult serial = simulate(in);  // compute + every collective
  const Overlap& by = serial.overlappable_by_kind;
  ASSERT_GT(by.forward, 0.0);
  ASSERT_GT(by.backward, 0.0);
  ASSERT_GT(by.reduce, 0.0);
  EXPECT_NEAR(by.forward + by.backward + by.reduce, serial.overlappable_s, 1e-9 * serial.overlappable_s);
  EXPECT_GE(serial.step_time_s, serial.compute_s + serial.overlappable_s);
  const auto hidden = [&](const Overlap& o) {
    return o.forward * std::min(by.forward, serial.forward_s) + std::min(o.backward * by.backward + o.reduce * by.reduce, serial.backward_s);
  };
  for (const Overlap& o : {Overlap{1, 1, 1}, Overlap{0.5, 0.5, 0.5}, Overlap{1, 0, 0}, Overlap{0, 0.3, 1}}) {
    in.system.overlap = o;
    EXPECT_NEAR(serial.step_time_s - simulate(in).step_time_s, hidden(o), 1e-9) << o.forward << " " << o.backward << " " << o.reduce;
  }
  // The engine's overlap scales the system's; its slowdown gives back that share of what hid.
  in.system.overlap = {1, 1, 1};
  in.engine.overlap = {0.5, 0.5, 0.5};
  EXPECT_NEAR(serial.step_time_s - simulate(in).step_time_s, hidden({0.5, 0.5, 0.5}), 1e-9);
  in.engine.overlap_slowdown = 0.25;
  EXPECT_NEAR(serial.step_time_s - simulate(in).step_time_s, 0.75 * hidden({0.5, 0.5, 0.5}), 1e-9);
  // Backward gathers issued after the unit's backward (FSDP1's BACKWARD_POST) hide under nothing; the reductions as before.
  in.engine.overlap_slowdown = 0;
  in.engine.overlap = {1, 0.1, 0.1};  // little enough that the backward's compute does not cap what hides
  in.engine.backward_prefetch = BackwardPrefetch::post;
  EXPECT_NEAR(serial.step_time_s - simulate(in).step_time_s, hidden({1, 0, 0.1}), 1e-9);
  EXPECT_LT(hidden({1, 0, 0.1}), hidden({1, 0.1, 0.1}));
}

// An engine that accumulates a replicated plan's gradients over the step's
// micro-batches (accumulate_locally: Megatron-LM) reduces them once, in the
// last micro-batch's backward (overlap_grad_reduce), so the reduction hides
// under that micro-batch's backward alone: 1/m of the step's; a reduction per
// micro-batch may hide under all of it.
TEST(Simulator, AOnceAStepReductionHidesUnderTheLastMicroBatchOnly) {
  SimInput in = frontier("ddp", 384);
  in.system.links.back().bandwidth_Bps /= 20;  // a reduction longer than one micro-batch's backward
  in.grad_accum = 4;
  in.engine.overlap = {1, 1, 1}, in.engine.overlap_slowdown = 0;
  for (const bool once : {true, false}) {
    in.engine.accumulate_locally = once;
    in.system.overlap = {0, 0, 0};
    const SimResult serial = simulate(in);
    const double reduce = serial.overlappable_by_kind.reduce, backward = serial.backward_s;
    ASSERT_GT(reduce, backward / in.grad_accum) << once;
    in.system.overlap = {1, 1, 1};
    const double hidden = serial.step_time_s - simulate(in).step_time_s;
    EXPECT_NEAR(hidden, std::min(reduce, once ? backward / in.grad_accum : backward), 1e-9) << once;
  }
}

// Every collective call pays the system's call overhead; DeepSpeed issues
// one gather per parameterised module, tierzero one per unit.
TEST(Simulator, CallsCostTheirOverheadAndDeepSpeedIssuesOnePerModule) {
  SimInput in = frontier("zero3", 64);  // flat gathers: one hop per unit
  in.system.overlap = {0.0, 0.0, 0.0};
  const SimResult base = simulate(in);
  in.system.call_overhead_s = 50e-6;
  const SimResult slow = simulate(in);
  ASSERT_GT(base.collective_calls, 0u);
  // Without overlap the step pays every call once, and the first gather's
  // and last bucket's (exposed, per unit) once more.
  TrainConfig cfg;
  cfg.model = in.model;
  cfg.micro_batch = in.micro_batch;
  const auto hops = step_transfers(in.plan, in.topology(), cfg, 0);
  double forward = 0, reduce = 0;
  for (const HopTransfer& h : hops) forward += h.phase == Phase::forward, reduce += h.phase == Phase::reduce;
  const double units = in.model.layers + 2;
  EXPECT_EQ(base.collective_calls, hops.size());
  EXPECT_NEAR(slow.step_time_s - base.step_time_s, 50e-6 * (static_cast<double>(hops.size()) + (forward + reduce) / units), 1e-9);
  in.engine.calls = CallPattern::per_module;  // DeepSpeed's call pattern alone, tierzero's kernels
  const SimResult ds = simulate(in);
  const std::uint64_t L = static_cast<std::uint64_t>(in.model.layers);
  // Forward: embed 2 calls (not 1), each block 6 (not 1); backward: each block 6.
  EXPECT_EQ(ds.collective_calls - base.collective_calls, 1 + 5 * L + 5 * L);
  EXPECT_EQ(ds.bytes_per_level, base.bytes_per_level);  // the same bytes, in more calls
  EXPECT_GT(ds.step_time_s, slow.step_time_s);
  EXPECT_EQ(engine_profile("deepspeed").calls, CallPattern::per_module);
  EXPECT_THROW(engine_profile("horovod"), ConfigError);
}

}  // namespace
}  // namespace tierzero

namespace tierzero {
namespace {

// A plan that fits with fewer bytes free than the allocation it repeats for every block (here FSDP's gradient of one
// block, reduced in fp32) is at the memory limit under an engine with a caching allocator; with that allocation's
// bytes free it is not; tierzero's engine (its buffers preallocated, no cache) never is.
TEST(Simulator, AFitWithLessFreeThanABlocksAllocationIsAtTheMemoryLimit) {
  SimInput in = frontier("zero3", 384);
  in.engine = engine_profile("fsdp");
  in.engine.reduce_bytes = 4;
  SimResult r = simulate(in);
  ASSERT_TRUE(r.fits);
  const GptConfig& m = in.model;
  const double block = 12.0 * m.channels * m.channels + 13.0 * m.channels;  // a GPT block's weights and biases
  const double hidden = static_cast<double>(in.micro_batch) * m.context * m.ffn_size() * in.engine.activation_bytes;
  EXPECT_NEAR(r.largest_allocation, std::max(4 * block, hidden), 1e-9 * r.largest_allocation);
  EXPECT_FALSE(r.at_memory_limit);  // 64 GB of which a few used
  r.judge_memory(r.memory_total + r.largest_allocation - 1, in.engine);
  EXPECT_TRUE(r.fits);
  EXPECT_TRUE(r.at_memory_limit);
  r.judge_memory(r.memory_total + r.largest_allocation, in.engine);
  EXPECT_FALSE(r.at_memory_limit);
  r.judge_memory(r.memory_total - 1, in.engine);  // does not fit: not "at the limit"
  EXPECT_FALSE(r.fits);
  EXPECT_FALSE(r.at_memory_limit);
  r.judge_memory(r.memory_total + 1, engine_profile("tierzero"));
  EXPECT_TRUE(r.fits);
  EXPECT_FALSE(r.at_memory_limit);
  // The simulation judges against the system's device memory.
  in.system.memory_bytes = r.memory_total + r.largest_allocation / 2;
  const SimResult tight = simulate(in);
  EXPECT_TRUE(tight.fits);
  EXPECT_TRUE(tight.at_memory_limit);
}

TEST(Planner, FitMemoryWidensTheBackwardCopyOnlyWhenItMustFit) {
  SimInput in = frontier("hier3", 16);
  in.recompute = Recompute{Recompute::Kind::full};
  in.system.memory_bytes = 56e9;     // a smaller device: the package copy no longer fits, the node's does
  ASSERT_FALSE(simulate(in).fits);
  const Plan fitted = fit_memory(in);
  EXPECT_EQ(fitted.bwd_params, Partition(Level::node));
  in.plan = fitted;
  EXPECT_TRUE(simulate(in).fits);
  SimInput roomy = frontier("hier3", 384);  // fits as it is: unchanged
  roomy.recompute = Recompute{Recompute::Kind::full};
  EXPECT_EQ(fit_memory(roomy).bwd_params, Partition(Level::package));
}

TEST(Planner, ListsOnlyPlansThatFitFastestFirst) {
  SimInput base = frontier("zero3", 64);
  const auto plans = search_plans(base, {20e9, 8, 0.0});
  ASSERT_FALSE(plans.empty());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    EXPECT_LE(plans[i].result.memory_total, 20e9);
    if (i) {
      EXPECT_LE(plans[i].result.tflops_per_device, plans[i - 1].result.tflops_per_device);
    }
  }
  // On two levels a three-level decomposition is the two-level one: listed once.
  SimInput dgx = base;
  dgx.system = load_system("dgx-h100");
  const auto listed = search_plans(dgx, {std::nullopt, 1000, 0.05, 0.0});  // no folding of near-equal plans
  ASSERT_GT(listed.size(), 10u);
  for (std::size_t i = 0; i < listed.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      EXPECT_FALSE(same_but_decomposition(listed[i], listed[j])) << i << " " << j;
      EXPECT_FALSE(same_but_buffers(listed[i], listed[j])) << i << " " << j;  // prefetch/bucket variants collapse
    }
  // With less memory than any plan needs, nothing is listed.
  EXPECT_TRUE(search_plans(base, {1e6, 8, 0.05}).empty());
}

// The planner's hop chunk: the candidate the simulator prices fastest. On
// Frontier at 64 ranks with a short step (micro-batch 1 x 512 tokens) the
// three-level collectives are exposed and pipelining their hops pays; with
// one level of more than one rank there is nothing to pipeline (whole).
TEST(Planner, ChoosesTheCheapestHopChunk) {
  SimInput in = frontier("hier3", 64);
  in.seq_len = 512;
  in.plan = fit_to(strategy_plan("hier3"), in.topology());
  const auto [plan, result] = choose_hop_chunk(in, 1e15);
  EXPECT_NE(plan.hop_chunk_bytes, 0u) << "pipelining pays here";
  std::map<std::size_t, double> step;
  for (const std::size_t c : kHopChunkCandidates) {
    SimInput t = in;
    t.plan.hop_chunk_bytes = c;
    step[c] = simulate(t).step_time_s;
  }
  EXPECT_EQ(result.step_time_s, step.at(plan.hop_chunk_bytes));
  for (const auto& [c, s] : step) EXPECT_LE(result.step_time_s, s) << "chunk " << c;
  EXPECT_LT(result.step_time_s, step.at(0)) << "cheaper than whole";
  // The search writes it into the plans it lists: a listed three-level plan carries its cheapest chunk.
  bool piped = false;
  for (const PlanCandidate& c : search_plans(in, {1e15, 1000, 0.0, 0.0})) {
    if (c.plan.gather != Decomposition::three_level) continue;
    SimInput t = in;
    t.plan = c.plan, t.recompute = c.recompute, t.mesh = c.mesh;
    EXPECT_EQ(c.plan.hop_chunk_bytes, choose_hop_chunk(t, 1e15).first.hop_chunk_bytes) << c.plan.describe();
    piped = piped || c.plan.hop_chunk_bytes != 0;
  }
  EXPECT_TRUE(piped);
  // One level: every chunk prices as whole, and whole is kept.
  SimInput one = in;
  one.ranks = 8;
  one.topology_spec = "world=8";
  one.plan = fit_to(strategy_plan("hier3"), one.topology());
  EXPECT_EQ(choose_hop_chunk(one, 1e15).first.hop_chunk_bytes, 0u);
}

// Plans at the memory limit (their throughput an upper bound) are listed after every other, each group fastest first.
TEST(Planner, ListsPlansAtTheMemoryLimitLast) {
  SimInput base = frontier("zero3", 64);
  base.engine = engine_profile("fsdp");
  const auto roomy = search_plans(base, {std::nullopt, 1000, 0.0, 0.0});
  ASSERT_FALSE(roomy.empty());
  EXPECT_FALSE(roomy.front().result.at_memory_limit);
  // A device just big enough for the fastest plan, with less free than its blocks' allocation.
  const SimResult& fastest = roomy.front().result;
  const auto tight = search_plans(base, {fastest.memory_total + fastest.largest_allocation / 2, 1000, 0.0, 0.0});
  ASSERT_FALSE(tight.empty());
  EXPECT_FALSE(tight.front().result.at_memory_limit);
  EXPECT_LT(tight.front().result.tflops_per_device, fastest.tflops_per_device);
  bool limit_seen = false;
  for (std::size_t i = 0; i < tight.size(); ++i) {
    if (!tight[i].result.at_memory_limit) {
      EXPECT_FALSE(limit_seen) << i << ": a plan with room after one at the limit";
    }
    limit_seen = limit_seen || tight[i].result.at_memory_limit;
    if (i && tight[i].result.at_memory_limit == tight[i - 1].result.at_memory_limit) {
      EXPECT_LE(tight[i].result.tflops_per_device, tight[i - 1].result.tflops_per_device);
    }
  }
  EXPECT_TRUE(limit_seen);
}

// Plans within 0.5% of a faster listed one of the same kind are folded into
// it: the listed ones of a kind are more than 0.5% apart, and each folded
// group says what its plans change.
TEST(Planner, FoldsPlansWithinHalfAPercentWithWhatTheyChange) {
  SimInput base = frontier("zero3", 384);
  const auto all = search_plans(base, {std::nullopt, 1000, 0.05, 0.0});
  const auto folded = search_plans(base, {std::nullopt, 1000, 0.05, 0.005});
  ASSERT_LT(folded.size(), all.size());
  std::size_t count = folded.size();
  for (const PlanCandidate& c : folded) {
    count += static_cast<std::size_t>(c.alike.count);
    if (c.alike.count > 0) {
      EXPECT_FALSE(c.alike.changes.empty());
      EXPECT_LE(c.alike.memory_min, c.alike.memory_max);
    }
    for (const PlanCandidate& d : folded)
      if (&c != &d && lossy(c.plan) == lossy(d.plan)) {
        const double hi = std::max(c.result.tflops_per_device, d.result.tflops_per_device);
        const double lo = std::min(c.result.tflops_per_device, d.result.tflops_per_device);
        EXPECT_LT(lo, hi * 0.995) << c.plan.describe() << " vs " << d.plan.describe();
      }
  }
  EXPECT_GE(count, all.size());  // nothing lost: every plan is listed or folded (buffer variants are folded too)
  // What differs: settings by name, the folded plan's value.
  PlanCandidate a = folded.front();
  a.plan.bwd_params = Level::world;
  PlanCandidate b = a;
  b.plan.bwd_params = Level::node, b.recompute = a.recompute.any() ? Recompute{} : Recompute{Recompute::Kind::full};
  const auto diff = plan_differences(a, b);
  ASSERT_EQ(diff.size(), 2u);
  EXPECT_EQ(diff[0], (std::pair<std::string, std::string>{"bwd_params", "node"}));
  EXPECT_EQ(diff[1].first, "recompute");
}

// A lossy plan must buy a real gain: on Frontier at 384 GCDs, 20B, the
// quantised plans beat plain ZeRO-3 by well under 5%, so an exact plan is
// listed first; with no margin, the fastest (lossy) one is.
TEST(Planner, PrefersExactPlansUnlessQuantisationBuysTheMargin) {
  SimInput base = frontier("zero3", 384);
  const auto exact_first = search_plans(base, {std::nullopt, 50, 0.05});
  ASSERT_FALSE(exact_first.empty());
  EXPECT_FALSE(lossy(exact_first.front().plan)) << exact_first.front().plan.describe();
  const auto fastest = search_plans(base, {std::nullopt, 50, 0.0});
  ASSERT_FALSE(fastest.empty());
  EXPECT_GE(fastest.front().result.tflops_per_device, exact_first.front().result.tflops_per_device);
  // Every lossy plan listed above an exact one is faster than it by the margin.
  for (std::size_t i = 0; i < exact_first.size(); ++i)
    for (std::size_t j = i + 1; j < exact_first.size(); ++j)
      if (lossy(exact_first[i].plan) && !lossy(exact_first[j].plan)) {
        EXPECT_GT(exact_first[i].result.tflops_per_device, 1.05 * exact_first[j].result.tflops_per_device);
      }
  // Where the network is slow enough (10 GbE between DGX A100 nodes), quantisation wins even with the margin.
  SimInput slow = base;
  slow.system = load_system("dgx-a100");
  slow.system.links.back().bandwidth_Bps = 1.25e9;
  slow.ranks = 64;
  slow.model = gpt_preset("gpt-1.3b");
  slow.micro_batch = 1;
  const auto quantised = search_plans(slow, {std::nullopt, 5, 0.05});
  ASSERT_FALSE(quantised.empty());
  EXPECT_TRUE(lossy(quantised.front().plan)) << quantised.front().plan.describe();
}

}  // namespace
}  // namespace tierzero

namespace tierzero {
namespace {

// Pipelined hops (plan key hop_chunk_bytes) are priced as docs/algorithms.md
// gives: a collective cut into n chunks lasts sum_h c_h + (n - 1) max_h c_h,
// c_h one chunk's call on hop h (transfer, latency, call overhead): fill and
// drain, and the slowest hop's other chunks. Whole, it lasts the sum of its
// hops' calls, so on links of similar speed the pipeline is cheaper.
TEST(Simulator, PipelinedHopsCostFillDrainAndTheSlowestHopsChunks) {
  SimInput in = frontier("hier3", 64);
  in.model = gpt_preset("gpt2-124m");
  in.plan.weight_bits = 16, in.plan.grad_bits = HopBits{};  // plain hops: no quantisation time to set apart
  const SimResult whole = simulate(in);
  in.plan.hop_chunk_bytes = 1 << 20;
  const SimResult cut = simulate(in);
  EXPECT_EQ(cut.bytes_per_level, whole.bytes_per_level);
  TrainConfig cfg;
  cfg.model = in.model;
  cfg.micro_batch = in.micro_batch;
  const std::vector<HopTransfer> hops = step_transfers(in.plan, in.topology(), cfg, 0);
  double want = 0;
  std::size_t calls = 0, pipelined = 0;
  for (std::size_t i = 0; i < hops.size();) {
    const HopTransfer& first = hops[i];
    const std::size_t n = static_cast<std::size_t>(first.chunks), k = static_cast<std::size_t>(first.hops);
    double sum = 0, slowest = 0;
    for (std::size_t j = i; j < i + k; ++j) {
      HopTransfer chunk = hops[j];
      for (auto& b : chunk.bytes) b = static_cast<std::uint64_t>(std::llround(static_cast<double>(b) / static_cast<double>(n)));
      const HopTime t = hop_time(chunk, in.topology(), in.system);
      const double c = t.transfer_s + t.latency_s + in.system.call_overhead_s;
      sum += c, slowest = std::max(slowest, c);
    }
    want += sum + static_cast<double>(n - 1) * slowest;
    calls += n * k, pipelined += n > 1;
    i += k;
  }
  ASSERT_GT(pipelined, 0u);
  EXPECT_EQ(cut.collective_calls, calls);
  EXPECT_NEAR(cut.comm_s, want, 1e-9 * want);
  EXPECT_LT(cut.comm_s, whole.comm_s);  // frontier's three links differ little enough for the overlap to pay
}

}  // namespace
}  // namespace tierzero
