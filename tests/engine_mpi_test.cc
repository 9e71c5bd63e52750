// The sharding engine on 1, 3 and 8 ranks (layouts 2x2x2 and 4x2):
// every unquantised strategy reproduces the single-rank run; quantised
// ones track it; memory per state and bytes per level per step equal the
// formulas of docs/algorithms.md (an untied head holds no embedding);
// a DeepSpeed ZeRO++ config maps to zeropp;
// the steady-state step allocates nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <new>

#include "mpi_test_util.h"
#include "tierzero/deepspeed_config.h"
#include "tierzero/sharded_trainer.h"
#include "tierzero/error.h"
#include "tierzero/mpi.h"
#include "comm/exec_clock.h"
#include "model/gemm.h"
#include "sim/traffic_model.h"
#include "tierzero/simulator.h"
#include "tierzero/system.h"

// Counts C++ heap allocations (MPI's own mallocs are not counted), and
// those of a page or more apart (a buffer, whose fresh pages would fault).
static std::atomic<long> g_allocations{0}, g_page_allocations{0};
void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (n >= 4096) g_page_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// Over-aligned allocations (host_memory()'s buffers) are counted too.
void* operator new(std::size_t n, std::align_val_t a) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (n >= 4096) g_page_allocations.fetch_add(1, std::memory_order_relaxed);
  const auto align = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(align, (n + align - 1) / align * align + (n ? 0 : align))) return p;
  throw std::bad_alloc();
}
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace tierzero {
namespace {

std::vector<Topology> layouts() {
  const int w = test::world_size();
  if (w == 8) return {Topology::parse("package=2,node=2,world=2", 8), Topology::parse("node=4,world=2", 8)};
  if (w == 3) return {Topology::parse("node=3,world=1", 3)};
  return {Topology::parse("world=" + std::to_string(w), w)};
}

TrainConfig small_config(DType dtype, const char* model = "gpt-tiny") {
  TrainConfig c = test::tiny_run(2, 2, 32, 4, dtype, model);
  c.schedule.warmup = 2;
  return c;
}

// Single-rank reference with the same global batch.
std::pair<std::vector<double>, std::vector<float>> reference(TrainConfig c, int steps, const TokenData& data) {
  c.micro_batch *= test::world_size();
  LocalTrainer t(c, data);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) losses.push_back(t.step().loss);
  return {losses, t.master()};
}

// A strategy's partitions, secondary copies and decompositions with every
// hop at 16 bits: zeropp's hpZ copy and two-level reductions, hier3's
// package copy and three-level gathers and reductions, without quantisation.
Plan unquantised(const std::string& name, const Topology& topo) {
  Plan p = fit_to(strategy_plan(name), topo);
  p.weight_bits = 16;
  p.grad_bits = HopBits{};
  EXPECT_FALSE(p.quantized()) << name;
  return p;
}

TEST(Engine, UnquantisedStrategiesReproduceTheSingleRankRun) {
  const TokenData data = TokenData::builtin();
  for (const char* model : test::kTinyModels) {
  SCOPED_TRACE(model);
  const TrainConfig cfg = small_config(DType::f32, model);
  const auto [ref_losses, ref_weights] = reference(cfg, 4, data);
  for (const Topology& topo : layouts()) {
    auto world = mpi_world(topo);
    for (const char* name : {"ddp", "zero1", "zero2", "zero3", "mics", "zeropp", "hier3"}) {
      ShardedTrainer t(cfg, unquantised(name, topo), *world, data);
      for (int i = 0; i < 4; ++i) {
        // Losses: the same batches and weights, summed in another order: fp32 rounding only.
        EXPECT_NEAR(t.step().loss, ref_losses[i], 2e-6 * ref_losses[i]) << name << " step " << i << " on " << topo.to_string();
      }
      const std::vector<float> w = t.gather_master();
      // Weights after 4 AdamW steps: AdamW's normalised update turns the reduction-order
      // rounding of tiny gradients into up to ~1e-6 absolute differences (lr 3e-3 scale).
      double worst = 0;
      for (std::size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(w[i]) - ref_weights[i]));
      EXPECT_LT(worst, 2e-5) << name << " on " << topo.to_string();
    }
  }
  }
}

// A world of one without MPI (self_world, what a process started without
// mpirun uses) trains exactly as MPI's one-rank world: the same losses and
// weights, bit for bit, under every strategy.
TEST(Engine, AWorldOfOneWithoutMpiIsMpisOneRankWorldBitForBit) {
  if (test::world_size() != 1) GTEST_SKIP() << "one rank only";
  const TokenData data = TokenData::builtin();
  const TrainConfig cfg = small_config(DType::bf16);
  const Topology topo = Topology::flat(1);
  auto mpi = mpi_world(topo);
  auto self = self_world(topo);
  for (const char* name : {"ddp", "zero1", "zero3", "zeropp", "hier3"}) {
    const Plan plan = fit_to(strategy_plan(name), topo);
    ShardedTrainer a(cfg, plan, *mpi, data), b(cfg, plan, *self, data);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(a.step().loss, b.step().loss) << name << " step " << i;
    EXPECT_EQ(a.gather_master(), b.gather_master()) << name;
  }
}

// The validation loss: the same held-out batches and the same mean for
// every strategy and for the single-rank trainer (to float rounding, or
// within the int8 weight noise for the quantised plans), whatever the rank
// count, and independent of the training data's sampling.
TEST(Engine, ValidationLossIsTheSameForEveryStrategy) {
  const TokenData all = TokenData::builtin();
  const TokenData val = all.slice(all.size() - 20000, all.size());
  const TrainConfig cfg = small_config(DType::f32);
  LocalTrainer local(cfg, all);
  const double want = local.evaluate(val, 5);
  EXPECT_GT(want, 4.0);  // an untrained model: near ln(256) = 5.5
  const Topology topo = layouts().front();
  auto world = mpi_world(topo);
  for (const std::string& name : strategy_names()) {
    ShardedTrainer exact(cfg, unquantised(name, topo), *world, all);
    EXPECT_NEAR(exact.evaluate(val, 5), want, 2e-6 * want) << name;
    ShardedTrainer quantised(cfg, fit_to(strategy_plan(name), topo), *world, all);
    EXPECT_NEAR(quantised.evaluate(val, 5), want, 1e-2 * want) << name;
  }
  local.step();
  EXPECT_NE(local.evaluate(val, 5), want);  // it does look at the weights
}

TEST(Engine, QuantisedStrategiesTrackTheUnquantisedLoss) {
  if (test::world_size() == 1) GTEST_SKIP() << "one rank has no collective to quantise";
  const TokenData data = TokenData::builtin();
  TrainConfig cfg = small_config(DType::bf16);
  // lr 1e-3 keeps the trajectories of the runs close enough to compare (at
  // 3e-3 two unquantised runs that differ only in rounding end ~2% apart).
  cfg.steps = 200;
  cfg.grad_accum = 1;
  cfg.seq_len = 64;
  cfg.schedule.lr = 1e-3f;
  cfg.schedule.warmup = 10;
  cfg.micro_batch = std::max(1, 32 / test::world_size());  // 32 sequences per step (fewer on 3 ranks)
  const Topology topo = layouts().front();
  auto world = mpi_world(topo);
  auto final_loss = [&](const char* name) {
    ShardedTrainer t(cfg, fit_to(strategy_plan(name), topo), *world, data);
    double tail = 0;
    for (int i = 0; i < 200; ++i) {
      const double l = t.step().loss;
      if (i >= 150) tail += l / 50;  // mean of the last 50 steps: less batch noise
    }
    return tail;
  };
  const double base = final_loss("zero3");
  EXPECT_LT(base, 3.0);
  for (const char* name : {"zeropp", "hier3"}) {
    const double q = final_loss(name);
    if (world->rank() == 0) std::printf("[ info ] mean loss of steps 150-199: zero3 %.4f, %s %.4f\n", base, name, q);
    EXPECT_NEAR(q, base, 0.02 * base) << name;
  }
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// The simulator's memory model's total for tierzero's engine, and what a trainer allocated.
double predicted_memory(const TrainConfig& cfg, const Topology& topo, const Plan& plan) {
  SimInput in;
  in.system = load_system("frontier");  // its levels hold every layout's; memory does not depend on its rates
  in.system.device.runtime_bytes = 0;
  in.ranks = topo.size();
  in.topology_spec = topo.to_string();
  in.model = cfg.model;
  in.micro_batch = cfg.micro_batch;
  in.seq_len = cfg.seq_len;
  in.dtype = cfg.param_dtype;
  if (cfg.recompute) in.recompute = Recompute{Recompute::Kind::full};
  in.plan = plan;
  return simulate(in).memory_total;
}

double allocated_memory(const ShardedTrainer& t) {
  double allocated = 0;
  for (const auto& [k, v] : t.memory_bytes()) allocated += static_cast<double>(v);
  return allocated;
}

TEST(Engine, BytesPerLevelAndMemoryPerStateMatchTheFormulas) {
  const TokenData data = TokenData::builtin();
  for (const char* model : test::kTinyModels) {
  SCOPED_TRACE(model);
  const TrainConfig cfg = small_config(DType::bf16, model);
  const GptLayout layout(cfg.model);
  for (const Topology& topo : layouts()) {
    auto world = mpi_world(topo);
    const int me = world->rank();
    std::map<std::string, std::uint64_t> world_bytes;
    for (const std::string& name : strategy_names()) {
      const Plan plan = fit_to(strategy_plan(name), topo);
      ShardedTrainer t(cfg, plan, *world, data);
      t.step();
      t.step();
      const auto got = t.last_step_bytes();
      // The formulas of docs/algorithms.md as the simulator's traffic model writes them out.
      const auto want = total_bytes(step_transfers(plan, topo, cfg, me));
      for (int l = 0; l < kNumLevels; ++l)
        EXPECT_EQ(got[l], want[l]) << name << " level " << level_name(static_cast<Level>(l)) << " on " << topo.to_string();
      world_bytes[name] = got[2];
      // Memory: sum over units of ceil(n_u / G) elements per state.
      auto shard_total = [&](const Partition& p) {
        std::size_t s = 0;
        for (const UnitInfo& u : layout.units()) s += ceil_div(u.numel, partition_group_size(topo, p));
        return s;
      };
      std::map<std::string, std::uint64_t> mem;
      for (const auto& [k, v] : t.memory_bytes()) mem[k] = v;
      EXPECT_EQ(mem["params"], shard_total(plan.params) * 2) << name;
      EXPECT_EQ(mem["bwd_params"], plan.bwd_params != plan.params ? shard_total(plan.bwd_params) * 2 : 0) << name;
      EXPECT_EQ(mem["grads"], shard_total(plan.grads) * 4) << name;
      EXPECT_EQ(mem["optim"], shard_total(plan.optim) * 12) << name;
      // A tied head holds the embedding whole for the step, and its gradient (fp32); an untied one neither.
      EXPECT_EQ(mem["embed"], cfg.model.tied ? 8 * layout.units()[layout.embed_unit()].numel : 0) << name;
      // The simulator's memory model for tierzero's engine counts every byte the engine allocates (the working
      // buffers by plan/engine_buffers.h's rules), not a formula of its own: the same total.
      EXPECT_EQ(predicted_memory(cfg, topo, plan), allocated_memory(t)) << name << " on " << topo.to_string();
    }
    if (topo.fanout(Level::world) > 1) {
      EXPECT_LT(world_bytes["hier3"], world_bytes["zeropp"]) << topo.to_string();
      EXPECT_LT(world_bytes["zeropp"], world_bytes["zero3"]) << topo.to_string();
    }
  }
  }
}

// Pipelined hops (plan key hop_chunk_bytes, comm/hier/hop_plan.h): the
// three-level plans train to the same losses as with whole hops (the
// all-gathers are bit for bit; the reduce-scatters sum the same values over
// the same hops), move the bytes the traffic model says, allocate what the
// memory model says and, once the first step has built the plans, nothing.
TEST(Engine, PipelinedHopsTrainAsWholeHopsAndAsModelled) {
  const TokenData data = TokenData::builtin();
  TrainConfig cfg = small_config(DType::bf16);
  cfg.matmul = MatmulType::fp32;  // oneDNN's bf16 primitive allocates a little per call (below)
  for (const Topology& topo : layouts()) {
    auto world = mpi_world(topo);
    const int me = world->rank();
    for (const char* name : {"zero3", "hier3"}) {
      Plan whole = fit_to(strategy_plan(name), topo);
      whole.gather = whole.reduce = Decomposition::three_level;
      Plan cut = whole;
      cut.hop_chunk_bytes = 1024;  // several chunks per unit and bucket of gpt-tiny
      ShardedTrainer a(cfg, whole, *world, data), b(cfg, cut, *world, data);
      const std::string what = std::string(name) + " on " + topo.to_string();
      for (int i = 0; i < 2; ++i) EXPECT_EQ(a.step().loss, b.step().loss) << what << " step " << i;
      const auto want = total_bytes(step_transfers(cut, topo, cfg, me));
      EXPECT_EQ(b.last_step_bytes(), want) << what;
      EXPECT_EQ(predicted_memory(cfg, topo, cut), allocated_memory(b)) << what;
      const long before = g_allocations.load();
      b.step();
      EXPECT_EQ(g_allocations.load() - before, 0) << what;
    }
  }
}

TEST(Engine, SteadyStateStepAllocatesNothing) {
  const TokenData data = TokenData::builtin();
  TrainConfig cfg = small_config(DType::bf16);
  cfg.matmul = MatmulType::fp32;
  const Topology topo = layouts().front();
  auto world = mpi_world(topo);
  for (const char* name : {"zero3", "hier3", "zeropp", "ddp", "mics"}) {
    ShardedTrainer t(cfg, fit_to(strategy_plan(name), topo), *world, data);
    t.step();  // first step: scratch buffers reach their sizes
    const long before = g_allocations.load();
    t.step();
    t.step();
    EXPECT_EQ(g_allocations.load() - before, 0) << name;
  }
}

// bf16 GEMMs go through oneDNN's matmul primitive, whose execute call keeps
// a few small argument maps on the heap (6 allocations of some tens of
// bytes per call, freed before it returns); every buffer (conversions,
// scratchpad, primitives) is made once, so no allocation of a page or
// more happens in the steady state.
TEST(Engine, SteadyStateBf16StepAllocatesNoBuffer) {
  if (!ops::cpu_has_bf16_units()) GTEST_SKIP() << "no bf16 matrix units: " << ops::gemm_info();
  const TokenData data = TokenData::builtin();
  TrainConfig cfg = small_config(DType::bf16);
  cfg.matmul = MatmulType::bf16;
  const Topology topo = layouts().front();
  auto world = mpi_world(topo);
  for (const char* name : {"zero3", "hier3"}) {
    ShardedTrainer t(cfg, fit_to(strategy_plan(name), topo), *world, data);
    ASSERT_EQ(t.matmul(), MatmulType::bf16);
    t.step();
    const long before = g_page_allocations.load();
    t.step();
    t.step();
    EXPECT_EQ(g_page_allocations.load() - before, 0) << name;
  }
}

// The step breakdown adds up: compute plus waits is the step (to 2% + 2 ms
// of bookkeeping, on the best of five steps: a rank descheduled in the few
// untimed lines of one step under a loaded machine is not the accounting's
// fault); what each executor ran during the waits fits in them (the
// gather queue's, and the reduction queue's: reductions and control) and in
// its busy time; gathers exist only where params are partitioned,
// quantisation only where the plan quantises, and time on a level only on
// levels the topology has; gather_breakdowns returns every rank's.
TEST(Engine, StepBreakdownAddsUp) {
  const TokenData data = TokenData::builtin();
  const TrainConfig cfg = small_config(DType::bf16);
  const Topology topo = layouts().front();
  auto world = mpi_world(topo);
  for (const char* name : {"ddp", "zero3", "hier3"}) {
    SCOPED_TRACE(name);
    const Plan plan = fit_to(strategy_plan(name), topo);
    ShardedTrainer t(cfg, plan, *world, data);
    t.step();
    double best_gap = 1e30;  // |parts - step| beyond the tolerance, the best step's
    for (int i = 0; i < 5; ++i) {
      t.step();
      const StepBreakdown& s = t.last_breakdown();
      const double parts = s.forward_s + s.backward_s + s.optimizer_s + s.gather_wait_s + s.reduce_wait_s + s.control_wait_s +
                           s.slot_wait_s + s.tensor_wait_s;
      EXPECT_EQ(s.tensor_wait_s, 0.0) << "no tensor group at tp 1";
      best_gap = std::min(best_gap, std::abs(parts - s.step_s) - (0.02 * s.step_s + 0.002));
    }
    EXPECT_LE(best_gap, 0.0);
    const StepBreakdown& b = t.last_breakdown();
    const double waits = b.gather_wait_s + b.reduce_wait_s + b.control_wait_s + b.slot_wait_s;
    EXPECT_GT(b.forward_s, 0);
    EXPECT_GT(b.backward_s, 0);
    double exposed[StepBreakdown::kKinds] = {};
    for (int k = 0; k < StepBreakdown::kKinds; ++k)
      for (int p = 0; p < StepBreakdown::kPhases; ++p) {
        exposed[k] += b.exposed[k][p];
        EXPECT_LE(b.exposed[k][p], b.busy[k][p] + 1e-6) << k << " " << p;
        EXPECT_GE(b.exposed[k][p], 0.0);
      }
    EXPECT_LE(exposed[0], waits + 1e-3);
    EXPECT_LE(exposed[1] + exposed[2], waits + 1e-3);
    EXPECT_LE(b.gather_behind_reduce_s, b.gather_wait_s + 1e-6);
    double gather_busy = 0, quant_busy = 0;
    for (int p = 0; p < StepBreakdown::kPhases; ++p) gather_busy += b.busy[0][p];
    for (int k = 0; k < StepBreakdown::kKinds; ++k) quant_busy += b.busy[k][phase_index(CommPhase::quant)];
    if (plan.params && world->size() > 1) {
      EXPECT_GT(gather_busy, 0);
    }
    if (!plan.params) {
      EXPECT_EQ(gather_busy, 0);
    }
    if (plan.quantized() && world->size() > 1) {
      EXPECT_GT(quant_busy, 0);
    }
    if (!plan.quantized() && plan.weight_bits == 16) {
      EXPECT_EQ(quant_busy, 0);
    }
    double reduce_on_links = 0;
    for (Level l : kAllLevels) {
      reduce_on_links += b.busy[1][phase_index(l)];
      if (topo.fanout(l) > 1) continue;
      for (int k = 0; k < StepBreakdown::kKinds; ++k) EXPECT_EQ(b.busy[k][phase_index(l)], 0) << level_name(l);
    }
    if (world->size() > 1) {
      EXPECT_GT(reduce_on_links, 0);  // the gradient reduction crossed some level
    }
    const StepBreakdown mine = b;
    const std::vector<StepBreakdown> all = t.gather_breakdowns();
    ASSERT_EQ(all.size(), static_cast<std::size_t>(world->size()));
    EXPECT_EQ(all[world->rank()].step_s, mine.step_s);
  }
}

TEST(Engine, Fp16LossScalingSkipsOverflowingSteps) {
  const TokenData data = TokenData::builtin();
  TrainConfig cfg = small_config(DType::f16);
  cfg.steps = 40;
  cfg.loss_scale_power = 40;  // 2^40: the scaled gradients overflow fp16 (65504) at once
  cfg.loss_scale_window = 3;  // double after 3 good steps
  const Topology topo = layouts().front();
  auto world = mpi_world(topo);
  ShardedTrainer t(cfg, fit_to(strategy_plan("zeropp"), topo), *world, data);
  EXPECT_EQ(t.loss_scale(), std::ldexp(1.0f, 40));
  const std::vector<float> before = t.gather_master();
  // The schedule: halve on every skipped step, double after each 3 good steps in a row.
  int skipped = 0, good_run = 0, doublings = 0;
  float prev = t.loss_scale();
  for (int i = 0; i < 40; ++i) {
    const StepStats s = t.step();
    EXPECT_TRUE(std::isfinite(s.loss)) << "step " << i;
    if (s.skipped) {
      ++skipped, good_run = 0;
      EXPECT_EQ(t.loss_scale(), prev / 2) << "an overflow halves the scale, step " << i;
    } else if (++good_run == 3) {
      good_run = 0, ++doublings;
      EXPECT_EQ(t.loss_scale(), prev * 2) << "3 good steps double it, step " << i;
    } else {
      EXPECT_EQ(t.loss_scale(), prev) << "step " << i;
    }
    if (i == 0) {
      EXPECT_TRUE(s.skipped) << "2^40 must overflow";
      EXPECT_EQ(t.gather_master(), before) << "a skipped step leaves the weights alone";
    }
    prev = t.loss_scale();
  }
  EXPECT_GE(skipped, 10);    // 2^40 down to below 2^16 needs at least 24 halvings minus the doublings between them
  EXPECT_GE(doublings, 1);   // and once in range, the window grows it again
  EXPECT_LT(skipped, 40);
}

TEST(Engine, InvalidPlansAreErrors) {
  const Topology topo = layouts().front();
  Plan p = strategy_plan("zero3");
  p.bwd_params = Level::world;
  p.params = std::nullopt;
  EXPECT_THROW(p.validate(topo), ConfigError);  // bwd_params wider than params
  Plan q = strategy_plan("zero3");
  q.optim = std::nullopt;
  EXPECT_THROW(q.validate(topo), ConfigError);  // grads and optim differ
  if (!topo.declares(Level::package)) {
    Plan h = strategy_plan("hier3");
    EXPECT_THROW(h.validate(topo), ConfigError);  // the topology lacks the package level
    EXPECT_NO_THROW(fit_to(h, topo).validate(topo));
  }
  EXPECT_THROW(strategy_plan("zero4"), ConfigError);
}

TEST(Engine, DeepSpeedZeroPlusPlusConfigMapsToZeropp) {
  const Topology topo = layouts().front();
  int node_group = topo.fanout(Level::package) * topo.fanout(Level::node);
  TrainConfig cfg;
  const std::string json = R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
    "zero_optimization": {"stage": 3, "zero_hpz_partition_size": )" + std::to_string(node_group) + R"(,
      "zero_quantized_weights": true, "zero_quantized_gradients": true, "overlap_comm": true, "reduce_bucket_size": 500000,
      "stage3_param_persistence_threshold": 10000},
    "bf16": {"enabled": true}, "gradient_clipping": 0.5,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.0002, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.01}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 7, "total_num_steps": 100}},
    "wall_clock_breakdown": true})";
  const DeepSpeedMapping m = parse_deepspeed_config(json, "ds.json", topo, cfg);
  Plan want = fit_to(strategy_plan("zeropp"), topo);
  want.bucket_bytes = 500000 * 2;  // elements x bf16
  want.persist_threshold = 10000;
  EXPECT_EQ(m.plan.bucket_bytes, want.bucket_bytes);
  if (node_group > 1) {
    EXPECT_EQ(m.plan.describe(), want.describe());
  }
  EXPECT_EQ(cfg.micro_batch, 4);
  EXPECT_EQ(cfg.grad_accum, 2);
  EXPECT_FLOAT_EQ(cfg.grad_clip, 0.5f);
  EXPECT_FLOAT_EQ(cfg.schedule.lr, 0.001f);  // WarmupDecayLR's warmup_max_lr (DeepSpeed's default), not the optimizer's lr
  EXPECT_EQ(cfg.schedule.shape, LrShape::ds_warmup_decay);
  EXPECT_EQ(cfg.schedule.total, 100);
  EXPECT_FLOAT_EQ(cfg.adamw.beta2, 0.99f);
  EXPECT_EQ(cfg.schedule.warmup, 7);
  EXPECT_EQ(cfg.param_dtype, DType::bf16);
  EXPECT_TRUE(cfg.breakdown);
  EXPECT_EQ(m.plan.persist_threshold, 10000u);
  EXPECT_TRUE(m.ignored.empty()) << m.ignored.front();
  TrainConfig c2;
  EXPECT_THROW(parse_deepspeed_config(R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 5}})", "ds.json", topo, c2),
               ConfigError);
  EXPECT_THROW(parse_deepspeed_config("{nope", "ds.json", topo, c2), ConfigError);
}

}  // namespace
}  // namespace tierzero
