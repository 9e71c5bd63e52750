// The simulator's tensor parallelism (issue 52: priced as the engine runs
// it): a member's GEMMs at their split shapes, the Megatron-LM all-reduces on
// the tensor level in closed form (and the sum of shared key/value heads'
// gradients), the states of a member's slices over the
// data-parallel ranks, the activations a member keeps, and throughput per
// device. The engine's counters against the same numbers are in
// tensor_parallel_bytes_mpi_test.cc.
#include <gtest/gtest.h>

#include <map>

#include "model/gpt.h"
#include "model/ops.h"
#include "plan/shard_layout.h"
#include "sim/compute_model.h"
#include "sim/op_list.h"
#include "sim/tensor_traffic.h"
#include "tierzero/error.h"
#include "tierzero/planner.h"
#include "tierzero/simulator.h"

#include <set>

namespace tierzero {
namespace {

double flops(const Op& o) { return o.kind == OpKind::gemm ? 2 * o.count * o.m * o.n * o.k : 0; }

// Every op of a member at tp 4 against the whole model's: the block's split GEMMs (QKV, the attention products,
// the output projection, the MLP's two) and the memory-bound ops on split tensors (RoPE, the softmax, the MLP's
// activation) and the vocabulary-parallel head's logits and loss at a quarter; the norms, residuals and
// embedding whole. Llama 3 8B: grouped queries (8 of 32), 128256 = 4 x 32064 vocabulary rows.
TEST(TensorParallelOps, AMemberComputesItsShareOfTheSplitOpsAndTheRestWhole) {
  const GptConfig m = gpt_preset("llama3-8b");
  OpOptions o;
  o.attention = "eager";
  const std::vector<Op> whole = micro_batch_ops(m, 1, 1024, o);
  o.tp = 4;
  const std::vector<Op> member = micro_batch_ops(m, 1, 1024, o);
  ASSERT_EQ(whole.size(), member.size());
  const std::map<std::string, double> split = {
      {"qkv", 4}, {"scores", 4}, {"context", 4}, {"probs_grad", 4}, {"qkv_grads", 4}, {"proj", 4}, {"gate_up", 4}, {"fc_proj", 4},
      {"rope", 4}, {"softmax", 4}, {"swiglu", 4}, {"head", 4}, {"loss", 4}};
  int checked = 0;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    std::string base = whole[i].name;  // an op, or its backward ("proj_dgrad", "softmax_grad")
    for (const std::string suffix : {"_dgrad", "_wgrad", "_grad"})
      if (!split.contains(base) && base.ends_with(suffix)) base.resize(base.size() - suffix.size());
    const auto it = split.find(base);
    const double share = it == split.end() ? 1 : it->second;
    SCOPED_TRACE(whole[i].name);
    if (whole[i].kind == OpKind::gemm) EXPECT_DOUBLE_EQ(flops(member[i]) * share, flops(whole[i]));
    else EXPECT_DOUBLE_EQ(member[i].bytes * share, whole[i].bytes);
    checked += it != split.end();
  }
  EXPECT_GE(checked, 20);  // forward, backward and recomputed ops of every split kind
}

// Llama 3 8B's 8 key/value heads at tp 16: a member's fused q|k|v GEMM has its 2 query heads and the one key and one
// value head they use, 4 heads of 128 columns (not the 1/16 of the whole's 48 heads that splitting would give).
TEST(TensorParallelOps, ASharedKeyValueHeadIsWholeOnEveryMemberSharingIt) {
  const GptConfig m = gpt_preset("llama3-8b");
  OpOptions o;
  o.tp = 16;
  int checked = 0;
  for (const Op& op : micro_batch_ops(m, 1, 1024, o))
    if (op.name == "qkv") {
      EXPECT_EQ(op.n, 4 * 128);
      ++checked;
    }
  EXPECT_GE(checked, 1);
}

// With sequence parallelism the norms and the residual adds run on the member's quarter of the rows too, the rest as at tp 4.
TEST(TensorParallelOps, ASequenceParallelMemberRunsItsShareOfTheNormsAndResiduals) {
  const GptConfig m = gpt_preset("llama3-8b");
  OpOptions o;
  o.tp = 4;
  const std::vector<Op> tp = micro_batch_ops(m, 1, 1024, o);
  o.sp = true;
  const std::vector<Op> sp = micro_batch_ops(m, 1, 1024, o);
  ASSERT_EQ(tp.size(), sp.size());
  int quartered = 0;
  for (std::size_t i = 0; i < tp.size(); ++i) {
    SCOPED_TRACE(tp[i].name);
    const bool rows = tp[i].name.starts_with("norm") || tp[i].name.starts_with("residual");
    EXPECT_DOUBLE_EQ(sp[i].bytes * (rows ? 4 : 1), tp[i].bytes);
    EXPECT_DOUBLE_EQ(flops(sp[i]), flops(tp[i]));
    quartered += rows;
  }
  EXPECT_GE(quartered, 5);  // norm1, residual1, norm2, residual2 (forward, recomputed), the final norm
}

SimInput job(const char* topology, int ranks, int tp, std::optional<Level> level = std::nullopt) {
  SimInput in;
  in.model = gpt_preset("gpt-tiny");
  in.system = load_system("cpu");
  in.ranks = ranks;
  in.topology_spec = topology;
  in.micro_batch = 2;
  in.seq_len = 32;
  in.mesh = MeshShape{tp, level};
  in.recompute = Recompute{Recompute::Kind::full};
  in.plan = fit_to(strategy_plan("zero3"), in.data_topology());
  return in;
}

// Per micro-batch and block: two all-reduces in forward, two in backward, two more where the forward is
// recomputed; per micro-batch, the vocabulary-parallel embedding's and head input gradient's: each a flat
// all-reduce of [micro-batch x sequence, channels] fp32 activations (the tierzero engine's) over the tensor
// group, 2 (tp - 1) / tp of the elements received per rank, all on the tensor level. And the loss's statistics
// per micro-batch: the rows' maxima gathered (one fp32 per token from each peer), two fp32 per token summed.
TEST(TensorParallelTraffic, TheAllReducesOfTheTensorGroupInClosedForm) {
  for (const auto& [tp, level, topology] : {std::tuple{2, Level::package, "package=2,node=2"}, std::tuple{4, Level::node, "node=4,world=2"},
                                            std::tuple{2, Level::node, "package=2,node=2,world=2"}}) {
    SCOPED_TRACE(topology);
    for (const Recompute::Kind kind : {Recompute::Kind::none, Recompute::Kind::full}) {
      SimInput in = job(topology, 8, tp, level);
      in.recompute = Recompute{kind};
      in.grad_accum = 3;
      const Topology world = in.topology();
      const double L = in.model.layers, n = 2.0 * 32 * in.model.channels;
      const double calls = (4 * L + (kind == Recompute::Kind::full ? 2 * L : 0) + 2) * 3, tokens = 2.0 * 32;
      const double statistics = 3 * ((tp - 1) * tokens + 2 * (tp - 1) * (2 * tokens / tp)) * 4;
      for (int me : {0, 5, 7}) {
        const auto got = total_bytes(tensor_transfers(in, world, me, 32));
        for (Level l : kAllLevels)
          EXPECT_EQ(got[static_cast<int>(l)], l == level ? calls * 2 * (tp - 1) * (n / tp) * 4 + statistics : 0)
              << level_name(l) << " rank " << me;
      }
    }
  }
  EXPECT_TRUE(tensor_transfers(job("node=4", 4, 1), Topology::parse("node=4", 4), 0, 32).empty());
}

// llama-tiny's 2 key/value heads at tp 4, each shared by 2 members: per micro-batch and block, one all-reduce more, of
// both heads' key and value rows (2 x 2 x 16 x 64 elements, no biases), with or without sequence parallelism.
TEST(TensorParallelTraffic, SharedKeyValueHeadsAddOneAllReducePerBlockAndMicroBatch) {
  for (const bool sp : {false, true}) {
    SimInput in = job("node=4,world=2", 8, 4, Level::node);
    in.model = gpt_preset("llama-tiny");
    in.mesh.sp = sp;
    in.grad_accum = 3;
    const Topology world = in.topology();
    const auto shared = total_bytes(tensor_transfers(in, world, 5, 32));
    in.model.kv_heads = 4;  // split in 4: no sum
    const auto split = total_bytes(tensor_transfers(in, world, 5, 32));
    const double L = in.model.layers, elements = 2.0 * 2 * 16 * 64;
    for (Level l : kAllLevels)
      EXPECT_EQ(shared[static_cast<int>(l)] - split[static_cast<int>(l)], l == Level::node ? L * 3 * 2 * (4 - 1) * (elements / 4) * 4 : 0)
          << level_name(l) << (sp ? ", sequence parallel" : "");
  }
}

// The states are a member's slices sharded over the data ranks: zero3's params at tp 2 on 4 ranks are the
// member's layout over 2; the activations are what the member's model holds; a device's tokens/s is its
// group's over tp, its compute about half.
TEST(TensorParallelSimulate, StatesActivationsAndThroughputAreAMembers) {
  const SimResult one = simulate(job("node=4", 4, 1));
  const SimInput in = job("node=4", 4, 2);
  const SimResult two = simulate(in);
  std::map<std::string, double> m(two.memory_bytes.begin(), two.memory_bytes.end());
  const GptLayout member(in.model, TpShard{2, 0});
  const StateLayouts states = StateLayouts::make(member, in.data_topology(), in.plan, 0);
  EXPECT_EQ(m["params"], static_cast<double>(states.params_bytes(in.dtype)));
  EXPECT_EQ(m["optim"], static_cast<double>(states.optim_bytes()));
  EXPECT_EQ(m["activations"], 4.0 * static_cast<double>(gpt_activation_elements(in.model, 2, 32, true, ops::attention_scratch(32, 2), 2)));
  EXPECT_LT(two.compute_s, 0.75 * one.compute_s);
  EXPECT_GT(two.compute_s, 0.45 * one.compute_s);
  EXPECT_DOUBLE_EQ(two.tokens_per_s_per_device, 2.0 * 32 / two.step_time_s / 2);
  // The bytes: the data-parallel transfers of the member's layout over the data ranks, and the tensor group's.
  TrainConfig cfg;
  cfg.model = in.model, cfg.micro_batch = 2, cfg.seq_len = 32, cfg.param_dtype = in.dtype;
  const TensorMember tensor_member{TpShard{2, 0}, in.topology(), 0};
  std::vector<HopTransfer> want = step_transfers(in.plan, in.data_topology(), cfg, 0, &tensor_member);
  for (const HopTransfer& h : tensor_transfers(in, in.topology(), 0, 32)) want.push_back(h);
  const auto bytes = total_bytes(want);
  for (int l = 0; l < kNumLevels; ++l) EXPECT_EQ(two.bytes_per_level[l], static_cast<double>(bytes[l])) << l;
  EXPECT_NE(two.bytes_per_level, one.bytes_per_level);
}

// An engine that overlaps the backward's input-gradient collectives with the weight gradients (tensor_overlap:
// tierzero's, Megatron-LM's) hides each under its layer's weight-gradient GEMM for as long as that GEMM runs, and with
// sequence parallelism each gather of a saved norm output under its layer's input-gradient GEMM. Over a tensor link
// slow enough that every collective outlasts its GEMM, the step is shorter by exactly the q|k|v and MLP
// weight-gradient GEMMs of every micro-batch, and with sequence parallelism their input-gradient GEMMs too; at tp 1
// nothing changes.
// TP 2 in a node of 4 over 3 micro-batches, on a link so slow that every tensor-parallel collective outlasts its GEMM.
SimInput slow_tensor_link(bool sp) {
  SimInput in = job("node=4", 4, 2);
  in.mesh.sp = sp;
  in.grad_accum = 3;
  for (LinkSpec& l : in.system.links) l.bandwidth_Bps = 1e3, l.achieved.clear();
  return in;
}

TEST(TensorParallelSimulate, TheColumnParallelBackwardsCollectivesHideUnderItsGemms) {
  for (const bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "sequence parallel" : "tensor parallel");
    SimInput in = slow_tensor_link(sp);
    in.engine.tensor_overlap = false;
    const SimResult exposed = simulate(in);
    in.engine.tensor_overlap = true;
    const SimResult overlapped = simulate(in);
    OpOptions o = op_options(in);
    double wgrad = 0, dgrad = 0;
    for (const Op& op : micro_batch_ops(in.model, in.micro_batch, 32, o)) {
      if (op.name == "qkv_wgrad" || op.name == "fc_wgrad") wgrad += op_time(op, in.system, in.engine);
      if (op.name == "qkv_dgrad" || op.name == "fc_dgrad") dgrad += op_time(op, in.system, in.engine);
    }
    EXPECT_GT(wgrad, 0);
    EXPECT_GT(dgrad, 0);
    EXPECT_NEAR(exposed.step_time_s - overlapped.step_time_s, 3 * (wgrad + (sp ? dgrad : 0)), 1e-9 * exposed.step_time_s);
    EXPECT_EQ(overlapped.bytes_per_level, exposed.bytes_per_level);
  }
  SimInput one = job("node=4", 4, 1);
  const double step = simulate(one).step_time_s;
  one.engine.tensor_overlap = false;
  EXPECT_EQ(simulate(one).step_time_s, step);
}

// With sequence parallelism and Transformer Engine's userbuffers (tp_comm_overlap), every gather and reduce-scatter
// of a block hides under the GEMM beside it. Over a tensor link slow enough that every collective outlasts its GEMM,
// the step is shorter than with the backward's overlap alone by exactly those GEMMs, every micro-batch's: the forward
// (and recomputed) q|k|v, MLP, projection and MLP-projection GEMMs and the two projections' input-gradient GEMMs (q|k|v's
// and the MLP's hide the saved inputs' gathers already). Without sequence parallelism (no userbuffers) nothing changes.
TEST(TensorParallelSimulate, UserbuffersHideEveryBlockCollectiveUnderItsGemm) {
  SimInput in = slow_tensor_link(true);
  in.engine.tensor_overlap = true;
  const SimResult backward_only = simulate(in);
  in.engine.tp_comm_overlap = true;
  const SimResult all = simulate(in);
  const std::set<std::string> beside = {"qkv", "proj", "fc", "fc_proj", "proj_dgrad", "fc_proj_dgrad"};
  double gemms = 0;  // forward, recomputed forward and backward (eager attention's own GEMMs carry no collective)
  for (const Op& op : micro_batch_ops(in.model, in.micro_batch, 32, op_options(in)))
    if (beside.contains(op.name)) gemms += op_time(op, in.system, in.engine);
  EXPECT_GT(gemms, 0);
  EXPECT_NEAR(backward_only.step_time_s - all.step_time_s, 3 * gemms, 1e-9 * backward_only.step_time_s);
  EXPECT_EQ(all.bytes_per_level, backward_only.bytes_per_level);
  in.mesh.sp = false;
  const double step = simulate(in).step_time_s;
  in.engine.tp_comm_overlap = false;
  EXPECT_EQ(simulate(in).step_time_s, step);
}

// Sequence parallelism, per micro-batch (model/gpt.h): each block's forward gathers twice and reduce-scatters
// twice, its backward gathers four times (the outputs' gradients, the saved norm outputs) and reduce-scatters
// twice, a recomputed forward repeats its two and two; the head's input and the embedding's gradient are
// gathered once, the embedding's lookup and the head's input gradient reduce-scattered once, and the loss's
// statistics exchanged as without sequence parallelism; each of the tp members receives 1/tp of the [micro-batch x sequence, channels] fp32
// activations from each peer per call. The norms' weight gradients (gpt-tiny's LayerNorms: weight and bias of
// C each) are all-reduced, 4 C per block and 2 C for the final norm.
TEST(TensorParallelTraffic, SequenceParallelismsGathersAndScattersInClosedForm) {
  for (const auto& [tp, level, topology] : {std::tuple{2, Level::package, "package=2,node=2"}, std::tuple{4, Level::node, "node=4,world=2"}}) {
    SCOPED_TRACE(topology);
    for (const Recompute::Kind kind : {Recompute::Kind::none, Recompute::Kind::full}) {
      SimInput in = job(topology, 8, tp, level);
      in.mesh.sp = true;
      in.recompute = Recompute{kind};
      in.grad_accum = 3;
      const double L = in.model.layers, R = kind == Recompute::Kind::full ? L : 0, C = in.model.channels, n = 2.0 * 32 * C;
      const double calls = 6 * L + 2 * R + 2 + 4 * L + 2 * R + 2, tokens = 2.0 * 32;
      const double norms = L * 2 * (tp - 1) * (4 * C / tp) + 2 * (tp - 1) * (2 * C / tp);
      const double statistics = (tp - 1) * tokens + 2 * (tp - 1) * (2 * tokens / tp);
      for (int me : {0, 5}) {
        const auto got = total_bytes(tensor_transfers(in, in.topology(), me, 32));
        for (Level l : kAllLevels)
          EXPECT_EQ(got[static_cast<int>(l)], l == level ? 3 * (calls * (tp - 1) * (n / tp) + norms + statistics) * 4 : 0) << level_name(l) << " rank " << me;
      }
    }
  }
}

// With sequence parallelism a member keeps the stream, the norms and the residual after attention at 1/tp of
// the rows (tierzero's engine: what its model allocates; another engine's model: the norms' share of a block's
// saved activations and, recomputing, the blocks' inputs); sp needs tp > 1 dividing the sequence length.
TEST(TensorParallelSimulate, SequenceParallelismKeepsAMembersShareOfTheStream) {
  SimInput in = job("node=4", 4, 2);
  const SimResult tp = simulate(in);
  in.mesh.sp = true;
  const SimResult sp = simulate(in);
  std::map<std::string, double> m(sp.memory_bytes.begin(), sp.memory_bytes.end()), t(tp.memory_bytes.begin(), tp.memory_bytes.end());
  EXPECT_EQ(m["activations"], 4.0 * static_cast<double>(gpt_activation_elements(in.model, 2, 32, true, ops::attention_scratch(32, 2), 2, true)));
  // Recomputing gpt-tiny (C 64, L 2, N 64 rows): the L + 1 residuals, the one block's two norms and residual
  // after attention and the final norm's statistics at half the rows, less the gathered [N, C], the slice and the 4 C.
  const double N = 64, C = 64, L = 2, R = N / 2;
  EXPECT_EQ(t["activations"] - m["activations"], 4 * ((L + 1) * (N - R) * C + 3 * (N - R) * C + 2 * 2 * (N - R) + 2 * (N - R) + (N - R) * C -
                                                      (N * C + R * C + 4 * C)));
  in.engine = engine_profile("megatron");
  in.mesh.sp = false;
  const double megatron_tp = simulate(in).memory_total;
  in.mesh.sp = true;
  EXPECT_LT(simulate(in).memory_total, megatron_tp);
  const auto error_of = [](const SimInput& x) -> std::string {
    try {
      simulate(x);
    } catch (const ConfigError& e) {
      return e.message();
    }
    return "";
  };
  SimInput one = job("node=4", 4, 1);
  one.mesh.sp = true;
  EXPECT_EQ(error_of(one), "sp: sequence parallelism needs tp > 1 (tp = 1)");
  SimInput odd = job("node=4", 4, 4);
  odd.mesh.sp = true, odd.seq_len = 30;
  EXPECT_EQ(error_of(odd), "sp: tp = 4 does not divide the sequence length 30");
}

// A degree that does not divide the tensor level is refused naming both.
TEST(TensorParallelSimulate, ADegreeThatDoesNotDivideTheLevelIsRefused) {
  try {
    simulate(job("node=4", 4, 3));
    FAIL() << "accepted tp 3 on node=4";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("tp = 3 does not divide the node level's fan-out 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tierzero

namespace tierzero {
namespace {

// The planner tries the tensor-parallel degrees the engine runs on the device: tierzero's on CPU ranks (2, 4 and 8
// on a level inside the node whose fan-out they divide), none on a GPU yet; a listed tensor-parallel plan's file
// carries its degree and level for train --plan.
TEST(TensorParallelPlanner, SearchesTheDegreesTheEngineRuns) {
  SimInput cpu = job("node=8", 8, 1);
  cpu.model = gpt_preset("gpt-mini");
  cpu.micro_batch = 4, cpu.seq_len = 256;
  PlanSearchOptions options;
  options.top = 1000, options.alike_within = 0;
  std::set<int> degrees;
  for (const PlanCandidate& c : search_plans(cpu, options)) {
    degrees.insert(c.mesh.tp);
    if (c.mesh.tp > 1) {
      EXPECT_EQ(c.mesh.tp_level, Level::node);
    }
  }
  EXPECT_EQ(degrees, (std::set<int>{1, 2}));  // gpt-mini's 6 heads: 4 and 8 do not divide them
  SimInput gpu;
  gpu.model = gpt_preset("gpt-1.3b");
  gpu.system = load_system("dgx-h100");
  gpu.ranks = 16;
  for (const PlanCandidate& c : search_plans(gpu, options)) EXPECT_EQ(c.mesh.tp, 1);
  gpu.engine = engine_profile("megatron");
  std::set<int> megatron;
  for (const PlanCandidate& c : search_plans(gpu, options)) megatron.insert(c.mesh.tp);
  EXPECT_TRUE(megatron.contains(8)) << "Megatron-LM runs tensor parallelism across a node's 8 GPUs";
  const PlanFile read = parse_plan_file(plan_file_text(strategy_plan("zero3"), false, {}, 2, Level::node), "tp.toml");
  EXPECT_EQ(read.tp, 2);
  EXPECT_EQ(read.tp_level, Level::node);
  EXPECT_FALSE(read.sp);
  EXPECT_TRUE(parse_plan_file(plan_file_text(strategy_plan("zero3"), false, {}, 2, Level::node, true), "sp.toml").sp);
}

}  // namespace
}  // namespace tierzero
