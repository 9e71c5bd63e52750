// The simulator's pipeline parallelism (issue 53: priced as Megatron-LM,
// torchtitan and DeepSpeed run it): the schedules' slots and in-flight
// micro-batches in closed form (Narayanan et al. 2021, section 2.2;
// Megatron-LM's theoretical_memory_usage.py), a stage priced as the model
// of its blocks on the data-parallel ranks, the bubble, the point-to-point
// bytes on the pipeline's level, and the refusals naming their values.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "config_error.h"
#include "sim/compute_model.h"
#include "sim/op_list.h"
#include "sim/pipeline.h"
#include "tierzero/planner.h"
#include "tierzero/error.h"
#include "tierzero/simulator.h"

namespace tierzero {
namespace {

TEST(Pipeline, SlotsAndInFlightMicroBatchesFollowTheSchedules) {
  PipelineShape p{4, 1, std::nullopt};
  EXPECT_EQ(schedule_slots(p, 16), 19.0);  // m + p - 1
  EXPECT_EQ(in_flight_micro_batches(p, 16), 4.0);
  EXPECT_EQ(in_flight_micro_batches(p, 2), 2.0);  // fewer micro-batches than stages
  p.set_schedule("interleaved:2");
  EXPECT_EQ(p.virtual_stages, 2);
  EXPECT_EQ(p.schedule(), "interleaved:2");
  EXPECT_EQ(schedule_slots(p, 16), 17.5);                  // m + (p - 1) / v
  EXPECT_EQ(in_flight_micro_batches(p, 16), 4 * (1 + 3.0 / 8));  // p (1 + (p - 1) / (p v))
  p.set_schedule("1f1b");
  EXPECT_EQ(p.virtual_stages, 1);
  for (const char* bad : {"interleaved:1", "interleaved:", "gpipe", "interleaved:x2"}) EXPECT_THROW(p.set_schedule(bad), ConfigError) << bad;
}

// Llama 3 70B on 32 H100s: tensor parallelism 8 in the node, 4 stages over the nodes, no data parallelism left;
// micro-batch 1 x 4096, 8 micro-batches.
SimInput job(int stages, const char* schedule = "1f1b") {
  SimInput in;
  in.model = gpt_preset("llama3-70b");
  in.system = load_system("dgx-h100");
  in.engine = engine_profile("megatron");
  in.ranks = 32;
  in.mesh.tp = 8;
  in.pipeline.stages = stages;
  in.pipeline.set_schedule(schedule);
  in.micro_batch = 1, in.seq_len = 4096, in.grad_accum = 8;
  in.recompute = Recompute::parse("selective");
  return in;
}

// The job under Megatron's distributed optimizer (zero1) over its data-parallel ranks.
SimResult priced(SimInput in) {
  in.plan = fit_to(strategy_plan("zero1"), in.data_topology());
  return simulate(in);
}

std::map<std::string, double> parts(const SimResult& r) { return {r.memory_bytes.begin(), r.memory_bytes.end()}; }

// A stage computes, holds and reduces what the model of its 20 blocks (and one vocabulary matrix) does on the
// same data-parallel ranks; the bubble is (p - 1) / v of its micro-batch slots, each a micro-batch's compute and its
// tensor group's exposed all-reduces (the warm-up's forwards and the cool-down's backwards wait on them stage after
// stage, as the steady state does: without them the bubble is short by 3 / v of a micro-batch's exposed
// collectives, here about a tenth of its compute); its activations are the first stage's in-flight micro-batches';
// each micro-batch's activation in and gradient back cross the world level.
TEST(Pipeline, AStageIsTheModelOfItsBlocksWithTheScheduleAround) {
  for (const char* schedule : {"1f1b", "interleaved:5"}) {
    const SimInput in = job(4, schedule);
    const SimResult r = priced(in);
    SimInput alone = in;
    alone.pipeline = {};
    alone.ranks = 8;  // one stage's ranks: its tensor group
    alone.model.layers = 20, alone.model.tied = true;
    const SimResult s = priced(alone);
    const double v = in.pipeline.virtual_stages;
    EXPECT_DOUBLE_EQ(r.gemm_s, s.gemm_s) << schedule;
    // The stage alone exposes its tensor collectives and the step's loss all-reduce (microseconds) only.
    EXPECT_NEAR(s.exposed_comm_s, s.tensor_exposed_s, 1e-4) << schedule;
    EXPECT_GT(s.tensor_exposed_s, 0.05 * (s.compute_s - s.optimizer_s)) << schedule;
    EXPECT_DOUBLE_EQ(r.tensor_exposed_s, s.tensor_exposed_s) << schedule;
    EXPECT_NEAR(r.pipeline_bubble_s, (s.compute_s - s.optimizer_s + s.tensor_exposed_s) / 8 * 3 / v, 1e-12 * r.pipeline_bubble_s)
        << schedule;
    EXPECT_DOUBLE_EQ(r.compute_s, s.compute_s + r.pipeline_bubble_s) << schedule;
    EXPECT_EQ(parts(r)["params"], parts(s)["params"]) << schedule;
    EXPECT_DOUBLE_EQ(parts(r)["activations"], parts(s)["activations"] * in_flight_micro_batches(in.pipeline, 8)) << schedule;
    // 2 v m transfers of [1 x 4096, 8192] bf16 activations, each member its eighth; and the step's loss and
    // gradient norm summed over the world (2 floats, one per rank 0 and 1: 4 bytes from each of the 24 ranks
    // beyond rank 0's node).
    EXPECT_EQ(r.bytes_per_level[static_cast<int>(Level::world)], static_cast<std::uint64_t>(2 * v * 8 * (4096 * 8192 * 2 / 8)) + 24 * 4)
        << schedule;
    EXPECT_EQ(s.bytes_per_level[static_cast<int>(Level::world)], 0u);
    EXPECT_GT(r.pipeline_p2p_s, 0.0);
    // The step: the stage's, its bubble and transfers, and that world all-reduce's latency (microseconds).
    EXPECT_NEAR(r.step_time_s, s.step_time_s + r.pipeline_bubble_s + r.pipeline_p2p_s, 1e-4) << schedule;
    // The four stages compute one data rank's tokens: per device, a quarter of the stage's.
    EXPECT_NEAR(r.tokens_per_s_per_device, 8.0 * 4096 / r.step_time_s / 32, 1e-9);
  }
  // Interleaving shrinks the bubble: 3/5 of a slot against 3.
  EXPECT_LT(priced(job(4, "interleaved:5")).pipeline_bubble_s, priced(job(4)).pipeline_bubble_s);
}

// Full recomputation: each micro-batch in flight keeps its blocks' inputs, and the one block being recomputed holds its
// working set once, not once per micro-batch in flight (so counted, the 1T GPT of Narayanan et al. 2021 on 64 stages,
// which trained on 80 GB A100s, was predicted at 146 GB).
TEST(Pipeline, ARecomputedBlocksWorkingSetIsHeldOnce) {
  for (const char* schedule : {"1f1b", "interleaved:5"}) {
    SimInput in = job(4, schedule);
    in.recompute = Recompute::parse("full");
    const SimResult r = priced(in);
    SimInput alone = in;
    alone.pipeline = {};
    alone.ranks = 8;
    alone.model.layers = 20, alone.model.tied = true;
    const SavedActivations acts = saved_activations(alone.model, 1, 4096, op_options(alone));
    ASSERT_GT(acts.recomputing, 0.0);
    EXPECT_NEAR(parts(priced(alone))["activations"], acts.saved + acts.recomputing, 1e-6 * acts.saved);
    const double held = acts.saved * in_flight_micro_batches(in.pipeline, 8) + acts.recomputing;
    EXPECT_NEAR(parts(r)["activations"], held, 1e-6 * held) << schedule;
  }
}

// An engine that overlaps the interleaved schedule's sends with the next chunk's compute (Megatron-LM's
// overlap_p2p_comm) exposes only the warm-up's and cool-down's 2 (p - 1) of the 2 v m + 2 (p - 1) sends where each
// is shorter than a chunk's forward and backward (here a 32 MB activation over 400 Gb/s against a tenth of a
// second per chunk); 1F1B's are all exposed either way.
TEST(Pipeline, TheInterleavedSendsHideUnderTheNextChunk) {
  SimInput in = job(4, "interleaved:5");
  in.engine.pipeline_p2p_overlap = false;
  const SimResult exposed = priced(in);
  in.engine.pipeline_p2p_overlap = true;
  const SimResult overlapped = priced(in);
  EXPECT_NEAR(overlapped.pipeline_p2p_s, exposed.pipeline_p2p_s * (2.0 * 3) / (2.0 * 5 * 8 + 2.0 * 3), 1e-12);
  EXPECT_NEAR(exposed.step_time_s - overlapped.step_time_s, exposed.pipeline_p2p_s - overlapped.pipeline_p2p_s, 1e-9);
  EXPECT_EQ(overlapped.bytes_per_level, exposed.bytes_per_level);
  SimInput plain = job(4);
  plain.engine.pipeline_p2p_overlap = false;
  const double p2p = priced(plain).pipeline_p2p_s;
  plain.engine.pipeline_p2p_overlap = true;
  EXPECT_EQ(priced(plain).pipeline_p2p_s, p2p);
}

std::string error_of(const SimInput& in) {
  return test::config_error_of([&] { priced(in); });
}

TEST(Pipeline, AShapeTheEngineOrTheModelCannotRunIsRefusedWithItsValues) {
  SimInput in = job(4);
  in.engine = engine_profile("tierzero");
  EXPECT_EQ(error_of(in), "the tierzero engine does not run the 1f1b pipeline schedule (data/engines: pipeline)");
  in = job(4, "interleaved:2");
  in.engine = engine_profile("deepspeed");
  EXPECT_EQ(error_of(in), "the deepspeed engine does not run the interleaved pipeline schedule (data/engines: pipeline)");
  in = job(4, "interleaved:3");  // 4 x 3 does not divide 80 layers
  EXPECT_EQ(error_of(in), "pp = 4 x 3 virtual stages does not divide the model's 80 layers");
  in = job(4, "interleaved:2");
  in.grad_accum = 6;
  EXPECT_EQ(error_of(in), "the interleaved schedule needs micro-batches per step (6) a multiple of pp = 4");
  in = job(3);
  EXPECT_EQ(error_of(in), "pp = 3 does not divide the world level's fan-out 4 (topology node=8,world=4)");
  in = job(2);
  in.pipeline.level = Level::package;
  EXPECT_EQ(error_of(in), "pp_level package: the job's topology node=8,world=4 has no such level");
  EXPECT_EQ(engine_profile("megatron").pipeline, (std::vector<std::string>{"1f1b", "interleaved"}));
  EXPECT_TRUE(engine_profile("fsdp").pipeline.empty());
}

// The splits place the layers as the engines do: even (Megatron-LM's default), ends:F,L (Megatron-Core's
// --decoder-first/last-pipeline-num-layers: the rest evenly over the inner stages), embedding (Megatron-DeepSpeed's
// 'type:transformer|embedding': (L + 2) / p items a stage, the end stages' one the embedding; BLOOM's README:
// [embed | 5], 6 on each of the ten inner stages, [5 | embed]); a stage without a layer, layers the inner stages
// cannot share evenly, ends that do not add up and an uneven interleaved schedule are refused with their values.
TEST(Pipeline, TheSplitsPlaceTheLayersAsTheEnginesDo) {
  PipelineShape p{4, 1, std::nullopt};
  EXPECT_EQ(stage_layers(p, 12), (std::vector<int>{3, 3, 3, 3}));
  EXPECT_EQ(p.split_name(), "even");
  p.set_split("ends:2,2");
  EXPECT_EQ(p.split_name(), "ends:2,2");
  EXPECT_EQ(stage_layers(p, 10), (std::vector<int>{2, 3, 3, 2}));
  p.set_split("ends:3,1");
  EXPECT_EQ(stage_layers(p, 10), (std::vector<int>{3, 3, 3, 1}));
  p.set_split("embedding");
  EXPECT_EQ(stage_layers(p, 10), (std::vector<int>{2, 3, 3, 2}));
  PipelineShape bloom{12, 1, std::nullopt};
  bloom.set_split("embedding");
  EXPECT_EQ(stage_layers(bloom, 70), (std::vector<int>{5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5}));
  PipelineShape two{2, 1, std::nullopt};
  two.set_split("ends:4,6");
  EXPECT_EQ(stage_layers(two, 10), (std::vector<int>{4, 6}));
  const auto error = [](PipelineShape shape, int layers) { return test::config_error_of([&] { stage_layers(shape, layers); }); };
  EXPECT_EQ(error(PipelineShape{4, 1, std::nullopt}, 10), "pp = 4 does not divide the model's 10 layers");
  p.set_split("ends:1,1");
  EXPECT_EQ(error(p, 3), "pipeline split ends:1,1: the 1 layers left of the model's 3 do not split evenly over the 2 other stages, at least 1 each");
  EXPECT_EQ(stage_layers(p, 4), (std::vector<int>{1, 1, 1, 1}));
  p.set_split("ends:3,3");
  EXPECT_EQ(error(p, 6), "pipeline split ends:3,3: the 0 layers left of the model's 6 do not split evenly over the 2 other stages, at least 1 each");
  EXPECT_EQ(error(two, 11), "pipeline split ends:4,6: the two stages hold 10 of the model's 11 layers");
  p.set_split("embedding");
  EXPECT_EQ(error(p, 2), "pipeline split embedding: pp = 4 leaves the end stages no layer of the model's 2");
  EXPECT_EQ(error(p, 11), "pipeline split embedding: pp = 4 does not divide the model's 11 layers + 2 (the embedding and the head counted as layers)");
  p.set_split("ends:2,2");
  p.set_schedule("interleaved:2");
  EXPECT_EQ(error(p, 10), "pipeline split ends:2,2 with the interleaved schedule: only 1f1b splits the layers unevenly here (split even)");
  for (const char* bad : {"ends:0,2", "ends:2", "ends:a,2", "ends:2,", "balanced", "ends:1,1,1"}) EXPECT_THROW(p.set_split(bad), ConfigError) << bad;
  p.set_split("even");
  EXPECT_EQ(p.split, PipelineShape::Split::even);
}

// A 10-layer model on 4 stages (Llama 3 70B's blocks, TP 8 in the node, a stage per node, 8 micro-batches). Where
// the end stages hold the most layers (ends:3,3: 3, 2, 2, 3), the step and the memory are the end stages', those of
// the even 12-layer pipeline's stages of 3 blocks; an even split stated as ends (ends:20,20 of 80) is the even one.
TEST(Pipeline, TheEndStagesDecideWhereTheyHoldTheMostLayers) {
  SimInput even = job(4);
  even.model.layers = 12;
  SimInput uneven = job(4);
  uneven.model.layers = 10;
  uneven.pipeline.set_split("ends:3,3");
  const SimResult e = priced(even), u = priced(uneven);
  EXPECT_EQ(u.step_time_s, e.step_time_s);
  EXPECT_EQ(u.tokens_per_s_per_device, e.tokens_per_s_per_device);
  EXPECT_EQ(u.memory_bytes, e.memory_bytes);
  EXPECT_EQ(u.memory_total, e.memory_total);
  EXPECT_LT(u.tflops_per_device, e.tflops_per_device);  // the same time for fewer of the model's FLOPs
  SimInput stated = job(4);
  stated.pipeline.set_split("ends:20,20");
  const SimResult a = priced(job(4)), b = priced(stated);
  EXPECT_EQ(a.step_time_s, b.step_time_s);
  EXPECT_EQ(a.memory_bytes, b.memory_bytes);
}

// Where an inner stage holds the most (ends:1,1 of 10 layers: 1, 4, 4, 1), the step is that stage's, in closed form
// from the op list's one-block figures t (no embedding, head or loss): 8 micro-batches of 4 t, and a bubble of 3
// slots of 4 t and a micro-batch's exposed tensor collectives; the device holds its blocks' activations for min(p - 1, m) = 3 micro-batches in flight (stage 1's),
// no logits, and its blocks' parameters with no vocabulary matrix (C and the final norm's C beside them: the
// layout's one embedding row per member).
TEST(Pipeline, AnInnerStageWithMoreLayersDecidesWithoutTheVocabulary) {
  SimInput in = job(4);
  in.model.layers = 10;
  in.pipeline.set_split("ends:1,1");
  const SimResult r = priced(in);
  OpOptions o = op_options(in);
  o.vocabulary = false;
  GptConfig block = in.model;
  block.layers = 1;
  const std::vector<Op> ops = micro_batch_ops(block, 1, 4096, o);
  for (const Op& op : ops) EXPECT_TRUE(op.name != "embedding" && op.name != "head" && op.name != "loss" && op.name != "norm_f") << op.name;
  EngineProfile engine = in.engine;
  engine.attention = o.attention;
  const ComputeTime t = price_ops(ops, in.system, engine);
  EXPECT_NEAR(r.gemm_s, 8 * 4 * t.gemm_s, 1e-12 * r.gemm_s);
  EXPECT_NEAR(r.forward_s, 8 * 4 * t.forward_s, 1e-12 * r.forward_s);
  EXPECT_GT(r.tensor_exposed_s, 0.0);
  EXPECT_NEAR(r.pipeline_bubble_s, (4 * t.total() + r.tensor_exposed_s / 8) * 3, 1e-12 * r.pipeline_bubble_s);
  EXPECT_NEAR(r.compute_s, 8 * 4 * t.total() + r.pipeline_bubble_s + r.optimizer_s, 1e-12 * r.compute_s);
  GptConfig four = in.model;
  four.layers = 4;
  const SavedActivations acts = saved_activations(four, 1, 4096, o);
  EXPECT_NEAR(parts(r)["activations"], acts.saved * 3 + acts.recomputing, 1e-9 * parts(r)["activations"]);
  EXPECT_EQ(parts(r)["logits"], 0.0);
  four.vocab = 8, four.tied = true;  // one row per member, one matrix
  const GptLayout layout(four, TpShard{8, 0});
  EXPECT_EQ(parts(r)["params"], 2.0 * static_cast<double>(layout.num_params()));  // bf16, replicated: no data parallelism
  EXPECT_EQ(layout.num_params() - 4 * layout.units()[layout.block_unit(0)].numel, 2u * 8192);
  // The end stages (1 block, the head and the embedding) are faster and lighter than the inner one.
  SimInput ends = in;
  ends.pipeline = {};
  ends.ranks = 8;
  ends.model.layers = 1;
  EXPECT_LT(priced(ends).compute_s * (8 + 3) / 8.0, r.compute_s);
}

// The planner tries 2, 4 and 8 stages over the nodes where the engine runs 1F1B and they divide the level and the
// layers, with the engine's own strategies; tierzero's engine has no pipeline, so none of its plans has one.
TEST(Pipeline, ThePlannerTriesStagesWhereTheEngineRunsThem) {
  SimInput in;
  in.model = gpt_preset("llama3-8b");
  in.system = load_system("dgx-h100");
  in.ranks = 16;  // node=8, world=2
  in.micro_batch = 1, in.seq_len = 4096, in.grad_accum = 8;
  PlanSearchOptions options;
  options.top = 100000, options.alike_within = 0;
  const auto stages = [&](const char* engine) {
    in.engine = engine_profile(engine);
    std::set<int> out;
    for (const PlanCandidate& c : search_plans(in, options)) {
      out.insert(c.pipeline.stages);
      if (c.pipeline.stages > 1) {
        EXPECT_EQ(c.pipeline.level_in(in.topology()), Level::world);
        EXPECT_TRUE(in.engine.runs(c.plan.name)) << c.plan.name;
      }
    }
    return out;
  };
  EXPECT_EQ(stages("megatron"), (std::set<int>{1, 2}));  // 4 and 8 do not divide the 2 nodes
  EXPECT_EQ(stages("tierzero"), (std::set<int>{1}));
}

}  // namespace
}  // namespace tierzero
