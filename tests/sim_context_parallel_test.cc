// The simulator's context parallelism (issue 53: ring attention as
// Megatron-Core and torchtitan run it, all-to-all as DeepSpeed-Ulysses
// does): a member's ops on seq/cp tokens with 1/cp of the attention, the
// exchanges' bytes in closed form on the context level, the ring's overlap
// with the attention kernels, the gradients still reduced over dp x cp
// ranks, the activations at seq/cp, and the refusals naming their values.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "config_error.h"
#include "sim/context_parallel.h"
#include "sim/op_list.h"
#include "tierzero/error.h"
#include "tierzero/planner.h"
#include "tierzero/simulator.h"

namespace tierzero {
namespace {

// FlashAttention's causal count (compute_model.cc), and a GEMM's.
double flops(const Op& o) {
  if (o.kind == OpKind::attention) return 2 * o.count * o.rows * o.seq * o.seq * o.head;
  return o.kind == OpKind::gemm ? 2 * o.count * o.m * o.n * o.k : 0;
}

// A member's ops: every GEMM and memory-bound op at 1/cp of the tokens (the same shapes with a quarter of the rows),
// attention at 1/cp of the causal total: the ring's cp kernels of seq/cp, Ulysses' whole sequence for 1/cp of the heads.
TEST(ContextParallelOps, AMemberComputesItsTokensAndItsShareOfTheAttention) {
  const GptConfig m = gpt_preset("llama3-8b");
  for (const bool ulysses : {false, true}) {
    SCOPED_TRACE(ulysses ? "a2a" : "ring");
    OpOptions o;
    o.recompute = Recompute::parse("selective");
    const std::vector<Op> whole = micro_batch_ops(m, 2, 8192, o);
    o.cp = 4, o.ulysses = ulysses;
    const std::vector<Op> member = micro_batch_ops(m, 2, 8192, o);
    ASSERT_EQ(whole.size(), member.size());
    double attention_whole = 0, attention_member = 0;
    for (std::size_t i = 0; i < whole.size(); ++i) {
      SCOPED_TRACE(whole[i].name);
      if (whole[i].kind == OpKind::attention) {
        attention_whole += flops(whole[i]), attention_member += flops(member[i]);
        EXPECT_EQ(member[i].seq, ulysses ? 8192 : 2048);
        EXPECT_EQ(member[i].count, whole[i].count * (ulysses ? 1 : 4));  // the ring's steps
      } else if (whole[i].kind == OpKind::gemm) {
        EXPECT_DOUBLE_EQ(flops(member[i]) * 4, flops(whole[i]));
      } else {
        EXPECT_DOUBLE_EQ(member[i].bytes * 4, whole[i].bytes);
      }
    }
    EXPECT_GT(attention_whole, 0);
    EXPECT_DOUBLE_EQ(attention_member * 4, attention_whole);
    // What a block keeps for its backward: a member's quarter.
    o.cp = 1;
    const double kept = block_saved_bytes(m, 2, 8192, o);
    o.cp = 4;
    EXPECT_DOUBLE_EQ(block_saved_bytes(m, 2, 8192, o) * 4, kept);
  }
}

// Llama 3 70B on 128 H100s (16 nodes of 8) under Megatron's distributed optimizer: TP 8 in the node, context parallel
// `cp` over the nodes, 16 / cp data-parallel ranks; 8 micro-batches of 1 x 8192, selective recomputation.
SimInput job(int cp, ContextShape::Kind kind = ContextShape::Kind::ring) {
  SimInput in;
  in.model = gpt_preset("llama3-70b");
  in.system = load_system("dgx-h100");
  in.engine = engine_profile("megatron");
  in.ranks = 128;
  in.mesh.tp = 8;
  in.context.degree = cp, in.context.kind = kind;
  in.micro_batch = 1, in.seq_len = 8192, in.grad_accum = 8;
  in.recompute = Recompute::parse("selective");
  in.plan = fit_to(strategy_plan("zero1"), in.data_topology());
  return in;
}

std::map<std::string, double> parts(const SimResult& r) { return {r.memory_bytes.begin(), r.memory_bytes.end()}; }
std::uint64_t world_bytes(const SimResult& r) { return r.bytes_per_level[static_cast<int>(Level::world)]; }

// cp = 1 prices no exchange, and its kind and level change nothing; the gradients and the states stay over the same
// 16 world ranks at cp = 4 (dp x cp: Megatron folds the context group into the gradient reduction), so a member's
// states are the same bytes and every byte it moves more is the ring's: per attention block (80 forward, 80 recomputed
// by selective recomputation, 80 backward) cp - 1 steps of K and V of 2048 tokens, twice that backward.
TEST(ContextParallel, TheRingMovesKeysAndValuesInClosedFormAndTheGradientsStayOverDpTimesCp) {
  const SimInput one = job(1);
  const SimResult r1 = simulate(one);
  SimInput other = one;
  other.context.kind = ContextShape::Kind::a2a, other.context.level = Level::node;
  const SimResult r1b = simulate(other);
  EXPECT_EQ(r1.step_time_s, r1b.step_time_s);
  EXPECT_EQ(r1.memory_total, r1b.memory_total);
  EXPECT_EQ(r1.bytes_per_level, r1b.bytes_per_level);
  EXPECT_EQ(r1.context_comm_s, 0.0);
  EXPECT_EQ(r1.context_exposed_s, 0.0);

  const SimInput in = job(4);
  EXPECT_EQ(in.data_topology().fanout(Level::world), 16);  // the plan partitions over dp x cp
  EXPECT_EQ(in.context.level_in(in.data_topology()), Level::world);
  const SimResult r = simulate(in);
  const std::uint64_t step = 2 * (8 / 8) * 128 * 1 * (8192 / 4) * 2;  // 2 x kv heads / tp x head x mb x seq / cp x bf16
  EXPECT_EQ(ring_step_bytes(in, 8192), step);
  EXPECT_EQ(world_bytes(r) - world_bytes(r1), 8u * 3 * (160 * step + 80 * 2 * step));
  // The tensor group's all-reduces at a quarter of the rows (besides the step's few bytes of loss and gradient norm).
  EXPECT_NEAR(r.bytes_per_level[static_cast<int>(Level::node)], r1.bytes_per_level[static_cast<int>(Level::node)] / 4.0, 64);
  EXPECT_EQ(parts(r)["grads"], parts(r1)["grads"]);
  EXPECT_EQ(parts(r)["optim"], parts(r1)["optim"]);
  EXPECT_DOUBLE_EQ(parts(r)["activations"] * 4, parts(r1)["activations"]);
  EXPECT_DOUBLE_EQ(parts(r)["logits"] * 4, parts(r1)["logits"]);
  // The four members of a context group compute one data rank's tokens.
  EXPECT_DOUBLE_EQ(r.tokens_per_s_per_device, 8.0 * 8192 / r.step_time_s / (8 * 4));
  EXPECT_GT(r.context_comm_s, 0.0);
}

// The ring's transfers hide under its attention kernels: none exposed over a link fast enough, and over a slow one
// everything but the kernels beside them: comm - attention x (cp - 1) / cp (every block runs cp kernels, cp - 1 of
// them beside a transfer).
TEST(ContextParallel, TheRingExposesOnlyWhatOutlastsTheAttentionBesideIt) {
  for (const double world_gbs : {1e6, 0.05}) {
    SimInput in = job(4);
    for (LinkSpec& l : in.system.links)
      if (l.level == Level::world) l.bandwidth_Bps = world_gbs * 1e9, l.latency_s = 0;
    in.system.call_overhead_s = 0;
    const SimResult r = simulate(in);
    SCOPED_TRACE(world_gbs);
    EXPECT_GE(r.context_exposed_s, 0.0);
    EXPECT_LE(r.context_exposed_s, r.context_comm_s);
    if (world_gbs > 1) EXPECT_EQ(r.context_exposed_s, 0.0);
    else EXPECT_NEAR(r.context_exposed_s, r.context_comm_s - r.attention_s * 3 / 4, 1e-9 * r.context_comm_s);
  }
}

// Ulysses: per block four all-to-alls forward (q, k, v, the output; again where recomputed) and four backward, each
// member receiving all but its 1/cp of mb x seq/cp x width; all on the critical path.
TEST(ContextParallel, UlyssesAllToAllsInClosedForm) {
  SimInput base;
  base.model = gpt_preset("llama3-8b");  // 32 heads, 8 key/value heads of 128
  base.system = load_system("dgx-h100");
  base.engine = engine_profile("deepspeed");
  base.ranks = 16;
  base.micro_batch = 1, base.seq_len = 8192, base.grad_accum = 2;
  base.recompute = Recompute::parse("full");
  base.plan = fit_to(strategy_plan("zero3"), base.data_topology());
  SimInput in = base;
  in.context = {8, ContextShape::Kind::a2a, std::nullopt};
  EXPECT_EQ(in.context.level_in(in.data_topology()), Level::node);
  const SimResult r0 = simulate(base), r = simulate(in);
  const std::uint64_t q = 1 * 1024 * (4096 / 8) * 7 * 2, kv = 1 * 1024 * (1024 / 8) * 7 * 2;
  EXPECT_EQ(ulysses_bytes(in, 8192, 4096), q);
  EXPECT_EQ(ulysses_bytes(in, 8192, 1024), kv);
  const int node = static_cast<int>(Level::node);
  EXPECT_EQ(r.bytes_per_level[node] - r0.bytes_per_level[node], 2u * (32 + 32 + 32) * (2 * q + 2 * kv));
  EXPECT_EQ(r.context_exposed_s, r.context_comm_s);
  EXPECT_GT(r.context_comm_s, 0.0);
}

std::string error_of(const SimInput& in) {
  return test::config_error_of([&] { simulate(in); });
}

TEST(ContextParallel, AShapeTheEngineTheJobOrTheModelCannotRunIsRefusedWithItsValues) {
  SimInput in = job(4);
  in.engine = engine_profile("tierzero");
  in.mesh.tp = 1, in.recompute = Recompute::parse("full");
  EXPECT_EQ(error_of(in), "the tierzero engine has no context parallelism (data/engines: context_parallel); use cp = 1");
  in = job(4);
  in.engine = engine_profile("deepspeed");
  in.recompute = Recompute::parse("full");
  EXPECT_EQ(error_of(in), "the deepspeed engine does not run ring context parallelism (it runs a2a; data/engines: context_parallel)");
  in = job(3);
  EXPECT_EQ(error_of(in), "tp 8 x pp 1 x cp 3 = 24 does not divide the job's 128 ranks (tp x pp x cp x dp must be the rank count)");
  in = job(32);
  EXPECT_EQ(error_of(in), "tp 8 x pp 1 x cp 32 = 256 does not divide the job's 128 ranks (tp x pp x cp x dp must be the rank count)");
  in = job(2);
  in.context.level = Level::package;
  EXPECT_EQ(error_of(in), "cp_level package: the job's topology node=1,world=16 has no such level");
  in = job(2);
  in.context.level = Level::node;  // the tensor group fills the node
  EXPECT_EQ(error_of(in), "cp = 2 does not divide the node level's fan-out 1 (topology node=1,world=16)");
  in = job(4);
  in.seq_len = 8188;  // divisible by 4, not by 8
  EXPECT_EQ(error_of(in), "cp = 4 (ring) needs the sequence length 8188 divisible by 2 x cp = 8 (two chunks per member balance the causal mask)");
  in = job(4);
  in.attention = "eager";
  EXPECT_EQ(error_of(in), "cp = 4 (ring) runs inside a fused attention kernel; the attention priced is eager (--attention)");
  in = job(2, ContextShape::Kind::a2a);  // 8 query heads and 1 key/value head per member of tp 8
  EXPECT_EQ(error_of(in), "cp = 2 (a2a) needs the heads per tensor-parallel member (8 query, 1 key/value) divisible by cp");
  in = job(2, ContextShape::Kind::a2a);
  in.seq_len = 8191;
  EXPECT_EQ(error_of(in), "cp = 2 (a2a) needs the sequence length 8191 divisible by cp");
  EXPECT_EQ(engine_profile("megatron").context_parallel, (std::vector<std::string>{"ring", "a2a"}));
  EXPECT_EQ(engine_profile("fsdp2").context_parallel, (std::vector<std::string>{"ring"}));
  EXPECT_EQ(engine_profile("deepspeed").context_parallel, (std::vector<std::string>{"a2a"}));
  EXPECT_TRUE(engine_profile("fsdp").context_parallel.empty());
  EXPECT_THROW(ContextShape::parse_kind("ulysses"), ConfigError);
}

// The planner tries context parallelism only for long sequences (16384 tokens or more), where the engine runs it, with
// the engine's own strategies, its level made explicit.
TEST(ContextParallel, ThePlannerTriesDegreesForLongSequencesOnly) {
  SimInput in;
  in.model = gpt_preset("llama3.2-1b");  // 32 query and 8 key/value heads
  in.model.context = 32768;
  in.system = load_system("dgx-h100");
  in.ranks = 8;
  in.micro_batch = 1, in.grad_accum = 4;
  PlanSearchOptions options;
  options.top = 100000, options.alike_within = 0;
  const auto degrees = [&](const char* engine, int seq) {
    in.engine = engine_profile(engine);
    in.seq_len = seq;
    std::set<int> out;
    for (const PlanCandidate& c : search_plans(in, options)) {
      out.insert(c.context.degree);
      if (c.context.degree > 1) {
        EXPECT_TRUE(c.context.level.has_value());
        EXPECT_TRUE(in.engine.runs(c.plan.name)) << c.plan.name;
      }
    }
    return out;
  };
  EXPECT_EQ(degrees("megatron", 32768), (std::set<int>{1, 2, 4, 8}));
  EXPECT_EQ(degrees("megatron", 8192), (std::set<int>{1}));
  EXPECT_EQ(degrees("fsdp", 32768), (std::set<int>{1}));
  // The user's degree alone, beside the meshes that leave it room (not tp 8 on the 8 ranks), its level made explicit.
  in.engine = engine_profile("megatron");
  in.seq_len = 8192;
  in.context.degree = 2;
  std::set<int> tps;
  for (const PlanCandidate& c : search_plans(in, options)) {
    EXPECT_EQ(c.context.degree, 2);
    EXPECT_EQ(c.context.level, Level::node);
    tps.insert(c.mesh.tp);
  }
  EXPECT_EQ(tps, (std::set<int>{1, 2, 4}));
}

}  // namespace
}  // namespace tierzero
