// Tensor-parallel training (tierzero/mesh.h at tp > 1; the engine over a
// member's slices): gpt-tiny and llama-tiny at tp 2 on 2 ranks (dp 1) and on
// 4 (dp 2: the tensor group on the world level, and on the node level of
// node=2,world=2, under zero3 and unquantised zeropp), and gpt-tiny at tp 4
// and llama-tiny at tp 4 on 4 ranks (its 2 key/value heads each shared by 2
// members) and 6 query heads over 3 key/value heads at tp 2 (test::kGqa63: each
// member holds two, one of them shared), each with and without sequence
// parallelism, and gpt-tiny with a
// vocabulary of 259 (split unevenly) at tp = the world, give the single-rank
// run's losses and gradient norms, step by step over 20 steps, and its
// weights, within fp32 reduction-order tolerance. The gradient norm is the
// check that replicated tensors (whose gradients every member holds) are
// counted once and split ones (the vocabulary's rows among them) once per
// member: counted on both members it would be larger by the norm of the
// positions, norms and biases (and, at tp 4, llama-tiny's shared key/value
// heads). Checkpoints saved at tp 1, 2 and 4 (shared heads; and kGqa63's at 2) resume at other
// degrees, the reader taking each element from one member, also with a
// vocabulary split unevenly, tied and untied.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "mpi_test_util.h"
#include "tierzero/checkpoint.h"
#include "tierzero/data.h"
#include "tierzero/error.h"
#include "tierzero/mesh.h"
#include "tierzero/plan.h"
#include "tierzero/sharded_trainer.h"
#include "tierzero/trainer.h"

namespace tierzero {
namespace {

constexpr int kSteps = 20;

// The layouts of the job a tensor group of `tp` fits: its world, and at 4 ranks and tp 2 a node level holding each group.
std::vector<Topology> layouts(int tp) {
  const int w = test::world_size();
  std::vector<Topology> out = {Topology::flat(w)};
  if (w == 4 && tp == 2) out.push_back(Topology::parse("node=2,world=2", 4));
  return out;
}

// f(local, global) for every element of a member's arena and its place in the whole model's.
template <class F>
void for_each_element(const GptLayout& member, F f) {
  for (const TensorInfo& t : member.tensors())
    for (const TpSlice& s : t.slices)
      for (std::size_t k = 0; k < s.count; ++k)
        for (std::size_t j = 0; j < s.length; ++j) f(t.offset + s.local + k * s.local_stride + j, t.global_offset + s.global + k * s.global_stride + j);
}

Plan unquantised(const std::string& name, const Topology& data_topology) {
  Plan p = fit_to(strategy_plan(name), data_topology);
  p.weight_bits = 16;
  p.grad_bits = HopBits{};
  return p;
}

// A tiny run of `model` with its vocabulary of `vocab` rows (0: the preset's).
TrainConfig tiny_run(int micro_batch, int steps, const char* model, int vocab) {
  TrainConfig cfg = test::tiny_run(micro_batch, 1, 32, steps, DType::f32, model);
  if (vocab > 0) cfg.model.vocab = vocab;
  return cfg;
}

// `model` at tensor-parallel degree `tp` (with sequence parallelism: `sp`) against the single-rank run of the same global batch.
void expect_the_single_rank_run(const char* model, int tp, bool sp, int vocab = 0) {
  SCOPED_TRACE(std::string(model) + " at tp " + std::to_string(tp) + (sp ? ", sequence parallel" : "") +
               (vocab ? ", vocabulary " + std::to_string(vocab) : ""));
  const int w = test::world_size();
  const TokenData data = TokenData::builtin();
  TrainConfig cfg = tiny_run(2, kSteps, model, vocab);
  cfg.schedule.warmup = 2;
  TrainConfig whole = cfg;
  whole.micro_batch *= w / tp;  // the data ranks' batches: the same global batch
  LocalTrainer ref(whole, data);
  std::vector<StepStats> ref_steps;
  for (int i = 0; i < kSteps; ++i) ref_steps.push_back(ref.step());
  for (const Topology& topo : layouts(tp)) {
    auto world = mpi_world(topo);
    const Mesh mesh(*world, MeshShape{tp, std::nullopt, sp});
    ASSERT_EQ(mesh.data_size(), w / tp);
    for (const char* name : {"zero3", "zeropp"}) {
      if (mesh.data_size() == 1 && std::string(name) == "zeropp") continue;  // one data rank: nothing for hpZ to split
      SCOPED_TRACE(std::string(name) + " on " + topo.to_string());
      ShardedTrainer t(cfg, unquantised(name, mesh.data_topology()), mesh, data);
      double worst_loss = 0, worst_norm = 0;
      for (int i = 0; i < kSteps; ++i) {
        const StepStats st = t.step();
        worst_loss = std::max(worst_loss, std::abs(st.loss - ref_steps[i].loss) / ref_steps[i].loss);
        worst_norm = std::max(worst_norm, std::abs(st.grad_norm - ref_steps[i].grad_norm) / ref_steps[i].grad_norm);
        EXPECT_EQ(st.tokens, ref_steps[i].tokens) << "step " << i;
      }
      // The same batches and weights, summed in other orders (the row-parallel sums split in parts, the data
      // ranks' reductions): fp32 rounding, ~1e-7 relative per sum, which AdamW's normalised steps carry on
      // (measured over the 20 steps: losses within 1.8e-7, norms 2.9e-5 as they shrink, weights 2.1e-5; a
      // wrong split, sum or count moves them by 1e-2 and more).
      EXPECT_LT(worst_loss, 2e-6);
      EXPECT_LT(worst_norm, 2e-4);
      const GptLayout member(cfg.model, TpShard{tp, mesh.tp_rank()});
      const std::vector<float> mine = t.gather_master();
      ASSERT_EQ(mine.size(), member.num_params());
      double worst = 0;
      for_each_element(member, [&](std::size_t local, std::size_t global) {
        worst = std::max(worst, std::abs(static_cast<double>(mine[local]) - ref.master()[global]));
      });
      EXPECT_LT(worst, 1e-4) << "weights after " << kSteps << " steps";
      std::printf("tp %d x dp %d%s, %s (V %d), %s on %s: worst relative loss %.2e, grad norm %.2e, weight %.2e\n", tp, mesh.data_size(),
                  sp ? " (sp)" : "", model, cfg.model.vocab, name, topo.to_string().c_str(), worst_loss, worst_norm, worst);
    }
  }
}

TEST(TensorParallelEngine, TrainsAsTheSingleRankRunDoes) {
  const int w = test::world_size();
  if (w % 2 != 0) GTEST_SKIP() << "tp = 2 needs an even world";
  for (const bool sp : {false, true}) {
    for (const char* model : test::kTinyModels) expect_the_single_rank_run(model, 2, sp);
    if (w == 4)  // llama-tiny's 2 key/value heads each shared by 2 members
      for (const char* model : test::kTinyModels) expect_the_single_rank_run(model, 4, sp);
    expect_the_single_rank_run(test::kGqa63, 2, sp);
  }
  expect_the_single_rank_run("gpt-tiny", w, false, 259);
}

// A recomputing member gives the same losses as a storing one (the same sums in the same order, recomputed),
// with and without sequence parallelism.
TEST(TensorParallelEngine, RecomputationChangesNothing) {
  const int w = test::world_size();
  if (w % 2 != 0) GTEST_SKIP() << "tp = 2 needs an even world";
  const TokenData data = TokenData::builtin();
  auto world = mpi_world(Topology::flat(w));
  for (const bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "sequence parallel" : "tensor parallel");
    const Mesh mesh(*world, MeshShape{2, std::nullopt, sp});
    TrainConfig cfg = test::tiny_run(2, 1, 32, 3, DType::f32, "llama-tiny");
    const Plan plan = fit_to(strategy_plan("zero3"), mesh.data_topology());
    ShardedTrainer stored(cfg, plan, mesh, data);
    cfg.recompute = true;
    ShardedTrainer recomputed(cfg, plan, mesh, data);
    for (int i = 0; i < 3; ++i) {
      const StepStats a = stored.step(), b = recomputed.step();
      EXPECT_EQ(a.loss, b.loss) << "step " << i;
      EXPECT_EQ(a.grad_norm, b.grad_norm) << "step " << i;
    }
    EXPECT_EQ(stored.gather_master(), recomputed.gather_master());
  }
}

// `model` trained 3 steps at degree `saved_tp` and saved (each rank's files its member's slices, sharded over
// the data ranks), then 3 more. The checkpoint holds the whole model (the reader puts the members' slices
// together: each member's weights, bit for bit). Resumed at each of `degrees` that divides the world (micro-
// batches of tp sequences on each of w / tp data ranks: the same global batch at every degree): the losses
// of continuing, bit for bit at the saving layout, within fp32 reduction order (as above) at another degree.
void expect_resumes_at_every_degree(const char* model, int saved_tp, std::initializer_list<int> degrees, int vocab = 0) {
  SCOPED_TRACE(std::string(model) + " saved at tp " + std::to_string(saved_tp) + (vocab ? ", vocabulary " + std::to_string(vocab) : ""));
  const int w = test::world_size();
  const TokenData data = TokenData::builtin();
  auto world = mpi_world(Topology::flat(w));
  const std::string dir = test::shared_temp_dir();
  auto config = [model, vocab](int tp) { return tiny_run(tp, 6, model, vocab); };
  auto plan = [](const Mesh& mesh) { return fit_to(strategy_plan("zero3"), mesh.data_topology()); };
  std::vector<double> continued;
  std::string saved;
  {
    const Mesh mesh(*world, MeshShape{saved_tp, std::nullopt});
    ShardedTrainer t(config(saved_tp), plan(mesh), mesh, data);
    for (int i = 0; i < 3; ++i) t.step();
    saved = t.save_checkpoint(dir, 0);
    const std::vector<float> mine = t.gather_master();
    CheckpointReader ckpt(saved);
    EXPECT_EQ(ckpt.meta().tp, saved_tp);
    const std::vector<float> whole = ckpt.read_full_master();
    EXPECT_EQ(ckpt.bytes_read(), whole.size() * sizeof(float));  // each element from one member: a shared head from its owner
    std::size_t differing = 0;
    for_each_element(GptLayout(config(saved_tp).model, TpShard{saved_tp, mesh.tp_rank()}),
                     [&](std::size_t local, std::size_t global) { differing += mine[local] != whole[global]; });
    EXPECT_EQ(differing, 0u);
    for (int i = 0; i < 3; ++i) continued.push_back(t.step().loss);
  }
  for (int tp : degrees) {
    if (w % tp != 0) continue;
    SCOPED_TRACE("resumed at tp " + std::to_string(tp));
    const Mesh mesh(*world, MeshShape{tp, std::nullopt});
    ShardedTrainer t(config(tp), plan(mesh), mesh, data);
    EXPECT_EQ(t.load_checkpoint(saved), tp != saved_tp);  // re-partitioned unless the same layout
    EXPECT_EQ(t.steps_done(), 3);
    for (int i = 0; i < 3; ++i) {
      const double loss = t.step().loss;
      if (tp == saved_tp) EXPECT_EQ(loss, continued[i]) << "step " << i + 4;
      else EXPECT_NEAR(loss, continued[i], 2e-6 * continued[i]) << "step " << i + 4;
    }
  }
  world->barrier();
  if (world->rank() == 0) std::filesystem::remove_all(dir);
}

TEST(TensorParallelEngine, CheckpointsResumeAtEveryDegree) {
  if (test::world_size() % 2 != 0) GTEST_SKIP() << "tp = 2 needs an even world";
  expect_resumes_at_every_degree("gpt-tiny", 2, {2, 1, 4});
  expect_resumes_at_every_degree("llama-tiny", 1, {2, 4});
  if (test::world_size() == 4) expect_resumes_at_every_degree("llama-tiny", 4, {4, 1, 2});  // shared key/value heads saved
  // 259 rows: 130 + 129 at tp 2, 65 + 65 + 65 + 64 at tp 4 (a tied head, then an untied one).
  expect_resumes_at_every_degree("gpt-tiny", 2, {1, 4}, 259);
  expect_resumes_at_every_degree("llama-tiny", 2, {1}, 259);
  expect_resumes_at_every_degree(test::kGqa63, 2, {2, 1});  // head 1 saved from member 0, its owner
  expect_resumes_at_every_degree(test::kGqa63, 1, {2});
}

}  // namespace
}  // namespace tierzero
