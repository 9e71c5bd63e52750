// Offload on 1, 3 and 8 ranks. Optimizer (Plan::optim_offload): cpu and
// nvme train bit for bit as the state in device memory does, under every
// strategy; a checkpoint saved from the NVMe store resumes in memory
// exactly. Parameters (Plan::param_offload): the same under every
// strategy that partitions them, with units held whole, more buffers, a
// deeper prefetch and both states in files; checkpoints move between the
// placements exactly, hpZ copy included. On a backend whose memory is not
// the host's (the CPU's kernels behind a Memory of their own, as a
// device's), the offloaded states are staged through copies, train bit for
// bit all the same, and move the bytes the simulator prices. memory_bytes says where each
// state is; a directory that cannot hold a swap file, replicated params
// offloaded and too few buffers are errors naming the problem.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>

#include "backend/backend_impl.h"
#include "mpi_test_util.h"
#include "plan/shard_layout.h"
#include "tierzero/error.h"
#include "tierzero/mpi.h"
#include "tierzero/sharded_trainer.h"

namespace tierzero {
namespace {

// A scratch directory of this test, the same on every rank (rank 0's pid, broadcast through the names).
std::string scratch(Communicator& world, const std::string& what) {
  float pid = world.rank() == 0 ? static_cast<float>(::getpid() % 1000000) : 0.0f;
  float sum = 0;
  world.all_reduce(&pid, &sum, 1, DType::f32, ReduceOp::sum);
  return (std::filesystem::temp_directory_path() / ("tierzero-offload-" + std::to_string(static_cast<int>(sum)) + "-" + what)).string();
}

// Removes a scratch directory once every rank is done with it (a rank
// that removed it at once could pull it from under a slower one creating
// its swap file there).
void remove_scratch(Communicator& world, const std::string& dir) {
  world.barrier();
  if (world.rank() == 0) std::filesystem::remove_all(dir);
}

Plan offloaded(Plan p, Offload where, const std::string& dir, int buffers = 2) {
  p.optim_offload = {where, dir, buffers};
  return p;
}

Plan params_offloaded(Plan p, Offload where, const std::string& dir, int buffers = 2) {
  p.param_offload = {where, dir, buffers};
  return p;
}

// Steps `base` and each of `others` `steps` times: every loss and gradient
// norm the same, then the master weights and, when `eval`, a validation loss.
void expect_trains_alike(ShardedTrainer& base, const std::vector<ShardedTrainer*>& others, int steps, const TokenData& data,
                         const std::string& what, bool eval = false) {
  for (int i = 0; i < steps; ++i) {
    const StepStats want = base.step();
    for (ShardedTrainer* t : others) {
      const StepStats got = t->step();
      EXPECT_EQ(got.loss, want.loss) << what << " step " << i << " " << t->plan().describe();
      EXPECT_EQ(got.grad_norm, want.grad_norm) << what << " step " << i << " " << t->plan().describe();
    }
  }
  const std::vector<float> w = base.gather_master();
  const double val = eval ? base.evaluate(data, 3) : 0.0;
  for (ShardedTrainer* t : others) {
    EXPECT_EQ(t->gather_master(), w) << what << " " << t->plan().describe();
    if (eval) {
      EXPECT_EQ(t->evaluate(data, 3), val) << what << " " << t->plan().describe();
    }
  }
}

TEST(Offload, OptimizerOnTheHostOrInFilesTrainsBitForBit) {
  const TokenData data = TokenData::builtin();
  const Topology topo = test::standard_layout();
  auto world = mpi_world(topo);
  const std::string dir = scratch(*world, "swap");
  for (const DType dtype : {DType::f32, DType::bf16}) {
    TrainConfig cfg = test::tiny_run(2, 2, 32, 4, dtype);
    cfg.schedule.warmup = 2;
    for (const char* name : {"ddp", "zero1", "zero2", "zero3", "mics", "zeropp", "hier3"}) {
      const Plan plan = fit_to(strategy_plan(name), topo);
      ShardedTrainer base(cfg, plan, *world, data);
      ShardedTrainer host(cfg, offloaded(plan, Offload::cpu, ""), *world, data);
      ShardedTrainer file2(cfg, offloaded(plan, Offload::nvme, dir), *world, data);
      ShardedTrainer file3(cfg, offloaded(plan, Offload::nvme, dir, 3), *world, data);
      expect_trains_alike(base, {&host, &file2, &file3}, 4, data, std::string(name) + " " + std::string(dtype_name(dtype)));
    }
  }
  remove_scratch(*world, dir);
}

TEST(Offload, ACheckpointOfTheNvmeStoreResumesInMemoryExactly) {
  const TokenData data = TokenData::builtin();
  const Topology topo = test::standard_layout();
  auto world = mpi_world(topo);
  const std::string dir = scratch(*world, "swap-ckpt"), ckpt = scratch(*world, "ckpt");
  TrainConfig cfg = test::tiny_run(2, 1, 32, 6, DType::bf16);
  const Plan plan = fit_to(strategy_plan("zero3"), topo);
  ShardedTrainer file(cfg, offloaded(plan, Offload::nvme, dir), *world, data);
  for (int i = 0; i < 3; ++i) file.step();
  const std::string saved = file.save_checkpoint(ckpt, 0);
  ShardedTrainer memory(cfg, plan, *world, data);
  EXPECT_FALSE(memory.load_checkpoint(saved)) << "where the state lives is not part of the layout";
  EXPECT_EQ(memory.gather_master(), file.gather_master());
  for (int i = 3; i < 6; ++i) EXPECT_EQ(memory.step().loss, file.step().loss) << "step " << i;
  remove_scratch(*world, ckpt);
  remove_scratch(*world, dir);
}

TEST(Offload, MemoryBytesSayWhereTheStateLives) {
  const TokenData data = TokenData::builtin();
  const Topology topo = test::standard_layout();
  auto world = mpi_world(topo);
  const std::string dir = scratch(*world, "swap-bytes");
  const TrainConfig cfg = test::tiny_run(2, 1, 32, 2, DType::bf16);
  const Plan plan = fit_to(strategy_plan("zero3"), topo);
  const auto none = test::memory_of(ShardedTrainer(cfg, plan, *world, data));
  const std::uint64_t optim = none.at("optim");
  ASSERT_GT(optim, 0u);
  EXPECT_EQ(none.count("optim_host") + none.count("optim_file"), 0u);
  const auto host = test::memory_of(ShardedTrainer(cfg, offloaded(plan, Offload::cpu, ""), *world, data));
  EXPECT_EQ(host.at("optim"), 0u);
  EXPECT_EQ(host.at("optim_host"), optim);
  const auto file = test::memory_of(ShardedTrainer(cfg, offloaded(plan, Offload::nvme, dir, 3), *world, data));
  EXPECT_EQ(file.at("optim"), 0u);
  EXPECT_GE(file.at("optim_file"), optim);                     // each unit's block padded to 4 KiB
  EXPECT_LT(file.at("optim_file"), optim + 4096 * 64);         // by less than a page per unit
  EXPECT_EQ(file.at("optim_host") % (3 * 4096), 0u);           // three page-aligned buffers of the largest block
  EXPECT_LT(file.at("optim_host"), optim * 3 + 3 * 4096);
  remove_scratch(*world, dir);
}

TEST(Offload, ParametersOnTheHostOrInFilesTrainBitForBit) {
  const TokenData data = TokenData::builtin();
  const Topology topo = test::standard_layout();
  auto world = mpi_world(topo);
  const std::string dir = scratch(*world, "param-swap");
  for (const DType dtype : {DType::f32, DType::bf16}) {
    TrainConfig cfg = test::tiny_run(2, 2, 32, 4, dtype);
    cfg.schedule.warmup = 2;
    for (const char* name : {"zero3", "mics", "zeropp", "hier3"})
      for (const std::size_t whole : {std::size_t{0}, std::size_t{20480}}) {  // 20480: the embedding and the head held whole
        Plan plan = fit_to(strategy_plan(name), topo);
        plan.persist_threshold = whole;
        Plan deeper = params_offloaded(plan, Offload::nvme, dir, 3);
        deeper.prefetch = 2;
        ShardedTrainer base(cfg, plan, *world, data);
        ShardedTrainer host(cfg, params_offloaded(plan, Offload::cpu, ""), *world, data);
        ShardedTrainer file(cfg, params_offloaded(plan, Offload::nvme, dir), *world, data);
        ShardedTrainer deep(cfg, deeper, *world, data);
        ShardedTrainer both(cfg, offloaded(params_offloaded(plan, Offload::nvme, dir), Offload::nvme, dir), *world, data);
        expect_trains_alike(base, {&host, &file, &deep, &both}, 4, data, std::string(name) + " " + std::string(dtype_name(dtype)), true);
      }
  }
  remove_scratch(*world, dir);
}

// zeropp with units held whole: the hpZ copy of a whole unit is part of
// what a checkpoint restores (a resumed run whose copy kept the initial
// weights would diverge from its second step).
TEST(Offload, CheckpointsMoveBetweenParameterPlacementsExactly) {
  const TokenData data = TokenData::builtin();
  const Topology topo = test::standard_layout();
  auto world = mpi_world(topo);
  const std::string dir = scratch(*world, "param-swap-ckpt"), ckpt = scratch(*world, "param-ckpt");
  TrainConfig cfg = test::tiny_run(2, 1, 32, 7, DType::f32);
  cfg.schedule.warmup = 1;
  Plan plan = fit_to(strategy_plan("zeropp"), topo);
  plan.persist_threshold = 20480;
  ShardedTrainer file(cfg, params_offloaded(plan, Offload::nvme, dir), *world, data);
  for (int i = 0; i < 3; ++i) file.step();
  const std::string saved = file.save_checkpoint(ckpt, 0);
  ShardedTrainer memory(cfg, plan, *world, data);
  EXPECT_FALSE(memory.load_checkpoint(saved)) << "where the parameters live is not part of the layout";
  ShardedTrainer again(cfg, params_offloaded(plan, Offload::nvme, dir, 4), *world, data);
  EXPECT_FALSE(again.load_checkpoint(saved));
  EXPECT_EQ(memory.gather_master(), file.gather_master());
  for (int i = 3; i < 7; ++i) {
    const float want = file.step().loss;
    EXPECT_EQ(memory.step().loss, want) << "step " << i;
    EXPECT_EQ(again.step().loss, want) << "step " << i;
  }
  remove_scratch(*world, ckpt);
  remove_scratch(*world, dir);
}

// The CPU backend behind a Memory of its own (host memory all the same,
// its uploads and downloads counted): the engine takes a device backend's
// paths, the offloaded states' staging copies included
// (sharded/host_staging.h). Each call checks which side its pointers are
// on, as a device's copies would care: an upload's destination, a
// download's source and both sides of a copy or a zero must lie in memory
// this Memory allocated, and the host side of an upload or download must not.
struct StagedBackend {
  class CountingMemory final : public Memory {
   public:
    void* allocate(std::size_t bytes) override {
      void* p = host_memory().allocate(bytes);
      std::lock_guard<std::mutex> lock(mu_);
      blocks_[reinterpret_cast<std::uintptr_t>(p)] = bytes;
      return p;
    }
    void release(void* p) noexcept override {
      {
        std::lock_guard<std::mutex> lock(mu_);
        blocks_.erase(reinterpret_cast<std::uintptr_t>(p));
      }
      host_memory().release(p);
    }
    void copy(void* dst, const void* src, std::size_t bytes) override {
      expect(dst, bytes, true, "copy's destination"), expect(src, bytes, true, "copy's source");
      host_memory().copy(dst, src, bytes);
    }
    void upload(void* dst, const void* src, std::size_t bytes) override {
      expect(dst, bytes, true, "upload's destination"), expect(src, bytes, false, "upload's source");
      up += bytes, host_memory().upload(dst, src, bytes);
    }
    void download(void* dst, const void* src, std::size_t bytes) override {
      expect(src, bytes, true, "download's source"), expect(dst, bytes, false, "download's destination");
      down += bytes, host_memory().download(dst, src, bytes);
    }
    void zero(void* dst, std::size_t bytes) override {
      expect(dst, bytes, true, "zero's destination");
      host_memory().zero(dst, bytes);
    }
    void fence() override {}
    MemMark mark() override { return {}; }
    void wait_for(const MemMark&) override {}
    std::atomic<std::uint64_t> up{0}, down{0};

   private:
    // Whether [p, p + bytes) lies in one of this Memory's allocations; a failure when it is not as `mine` says.
    void expect(const void* p, std::size_t bytes, bool mine, const char* what) {
      if (bytes == 0) return;
      const auto a = reinterpret_cast<std::uintptr_t>(p);
      std::lock_guard<std::mutex> lock(mu_);
      auto it = blocks_.upper_bound(a);
      const bool inside = it != blocks_.begin() && (--it, a + bytes <= it->first + it->second);
      if (inside != mine) ADD_FAILURE() << what << (mine ? " is not in the backend's memory" : " is in the backend's memory");
    }
    std::mutex mu_;
    std::map<std::uintptr_t, std::size_t> blocks_;
  };
  CountingMemory memory;
  Backend backend;
  StagedBackend() : backend(cpu_backend()) { backend.name = "staged", backend.memory = &memory; }
};

TEST(Offload, OnADeviceLikeBackendTheOffloadedStatesAreStagedBitForBit) {
  const TokenData data = TokenData::builtin();
  const Topology topo = test::standard_layout();
  auto world = mpi_world(topo);
  const std::string dir = scratch(*world, "staged-swap");
  for (const DType dtype : {DType::f32, DType::bf16}) {
    TrainConfig cfg = test::tiny_run(2, 2, 32, 3, dtype);
    cfg.schedule.warmup = 1;
    for (const char* name : {"zero3", "zeropp"}) {
      const Plan plan = fit_to(strategy_plan(name), topo);
      Plan whole = params_offloaded(offloaded(plan, Offload::cpu, ""), Offload::cpu, "");
      whole.persist_threshold = 20480;
      Plan deep = params_offloaded(plan, Offload::nvme, dir, 3);
      deep.prefetch = 2;
      const std::vector<Plan> plans = {plan, offloaded(plan, Offload::cpu, ""), params_offloaded(plan, Offload::cpu, ""),
                                       offloaded(params_offloaded(plan, Offload::nvme, dir), Offload::nvme, dir), deep, whole};
      std::vector<std::unique_ptr<StagedBackend>> backends;
      std::vector<std::unique_ptr<ShardedTrainer>> staged;
      for (const Plan& p : plans) {
        backends.push_back(std::make_unique<StagedBackend>());
        staged.push_back(std::make_unique<ShardedTrainer>(cfg, p, *world, data, nullptr, backends.back()->backend));
      }
      ShardedTrainer base(cfg, plan, *world, data);
      Plan base_whole = plan;
      base_whole.persist_threshold = 20480;
      ShardedTrainer base_w(cfg, base_whole, *world, data);
      const GptLayout layout(cfg.model);
      const StateLayouts states = StateLayouts::make(layout, topo, plan, world->world_rank(world->rank()));
      const std::uint64_t P = states.params_bytes(dtype), B = states.bwd_params_bytes(dtype), O = states.optim.total * sizeof(float);
      // Backward reads every unit but the embedding (its gradient needs no weights).
      const std::uint64_t bwd_read = B ? B - states.bwd_params.shard[layout.embed_unit()] * dtype_size(dtype)
                                       : P - states.params.shard[layout.embed_unit()] * dtype_size(dtype);
      for (int i = 0; i < 3; ++i) {
        std::vector<std::uint64_t> up, down;
        for (const auto& b : backends) up.push_back(b->memory.up), down.push_back(b->memory.down);
        const StepStats want = base.step(), want_w = base_w.step();
        for (std::size_t k = 0; k < staged.size(); ++k) {
          const StepStats got = staged[k]->step();
          const StepStats& ref = k + 1 == staged.size() ? want_w : want;
          EXPECT_EQ(got.loss, ref.loss) << name << " " << dtype_name(dtype) << " step " << i << " " << plans[k].describe();
          EXPECT_EQ(got.grad_norm, ref.grad_norm) << name << " step " << i << " " << plans[k].describe();
          up[k] = backends[k]->memory.up - up[k], down[k] = backends[k]->memory.down - down[k];
        }
        // Against the in-memory plan on the same backend: the optimizer's gradients down and masters up; the
        // parameters' shard up for each micro-batch's forward and backward (or the hpZ copy, written in forward
        // on its way down), and down once from the update (tierzero/simulator.h prices the same).
        const std::uint64_t accum = static_cast<std::uint64_t>(cfg.grad_accum);
        EXPECT_EQ(up[1] - up[0], O) << name << " optimizer on the host";
        EXPECT_EQ(down[1] - down[0], O) << name;
        EXPECT_EQ(up[2] - up[0], accum * (P + bwd_read)) << name << " parameters on the host";
        EXPECT_EQ(down[2] - down[0], P + accum * B) << name;
      }
      const std::vector<float> w = base.gather_master(), ww = base_w.gather_master();
      const double val = base.evaluate(data, 3);
      for (std::size_t k = 0; k < staged.size(); ++k) {
        EXPECT_EQ(staged[k]->gather_master(), k + 1 == staged.size() ? ww : w) << name << " " << plans[k].describe();
        if (k + 1 < staged.size()) {
          EXPECT_EQ(staged[k]->evaluate(data, 3), val) << name << " " << plans[k].describe();
        }
      }
    }
  }
  remove_scratch(*world, dir);
}

TEST(Offload, MemoryBytesSayWhereTheParametersLive) {
  const TokenData data = TokenData::builtin();
  const Topology topo = test::standard_layout();
  auto world = mpi_world(topo);
  const std::string dir = scratch(*world, "param-swap-bytes");
  const TrainConfig cfg = test::tiny_run(2, 1, 32, 2, DType::bf16);
  const Plan plan = fit_to(strategy_plan("zeropp"), topo);
  const auto none = test::memory_of(ShardedTrainer(cfg, plan, *world, data));
  const std::uint64_t params = none.at("params"), bwd = none.at("bwd_params");
  ASSERT_GT(params, 0u);
  for (const char* k : {"params_host", "params_file", "bwd_params_host"}) {
    EXPECT_EQ(none.count(k), 0u) << k;
  }
  const auto of = [](const auto& m, const char* k) { return m.count(k) ? m.at(k) : std::uint64_t{0}; };  // absent: 0 bytes
  const auto host = test::memory_of(ShardedTrainer(cfg, params_offloaded(plan, Offload::cpu, ""), *world, data));
  EXPECT_EQ(host.at("params") + host.at("bwd_params"), 0u);
  EXPECT_EQ(host.at("params_host"), params);
  EXPECT_EQ(of(host, "bwd_params_host"), bwd);
  const auto file = test::memory_of(ShardedTrainer(cfg, params_offloaded(plan, Offload::nvme, dir, 3), *world, data));
  EXPECT_EQ(file.at("params") + file.at("bwd_params"), 0u);
  EXPECT_EQ(of(file, "bwd_params_host"), bwd) << "the hpZ copy stays in host memory";
  EXPECT_GE(file.at("params_file"), params);              // each unit's block padded to 4 KiB
  EXPECT_LT(file.at("params_file"), params + 4096 * 64);  // by less than a page per unit
  EXPECT_EQ(file.at("params_host") % (3 * 4096), 0u);     // three page-aligned buffers of the largest block
  EXPECT_LT(file.at("params_host"), params * 3 + 3 * 4096);
  for (const auto& [k, v] : none) {
    if (k != "params" && k != "bwd_params") {
      EXPECT_EQ(file.at(k), v) << k << " does not move";
    }
  }
  remove_scratch(*world, dir);
}

TEST(Offload, ADirectoryThatCannotHoldTheSwapFileIsAnError) {
  const TokenData data = TokenData::builtin();
  const Topology topo = test::standard_layout();
  auto world = mpi_world(topo);
  const TrainConfig cfg = test::tiny_run(2, 1, 32, 2, DType::bf16);
  const Plan plan = offloaded(fit_to(strategy_plan("zero3"), topo), Offload::nvme, "/proc/tierzero-no-such-dir");
  try {
    ShardedTrainer t(cfg, plan, *world, data);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("cannot create '/proc/tierzero-no-such-dir/tierzero-optim-"), std::string::npos) << e.message();
  }
  EXPECT_THROW(offloaded(fit_to(strategy_plan("zero3"), topo), Offload::nvme, "").validate(topo), ConfigError);
  EXPECT_THROW(offloaded(fit_to(strategy_plan("zero3"), topo), Offload::nvme, "/tmp", 1).validate(topo), ConfigError);
  try {
    ShardedTrainer t(cfg, params_offloaded(fit_to(strategy_plan("zero3"), topo), Offload::nvme, "/proc/tierzero-no-such-dir"), *world, data);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("offload_param nvme: cannot create '/proc/tierzero-no-such-dir/tierzero-params-"), std::string::npos)
        << e.message();
  }
}

TEST(Offload, ParametersOffloadedNeedPartitionsAndBuffers) {
  const Topology topo = test::standard_layout();
  for (const char* name : {"ddp", "zero1", "zero2"}) {
    try {
      params_offloaded(fit_to(strategy_plan(name), topo), Offload::cpu, "").validate(topo);
      ADD_FAILURE() << name << ": no error";
    } catch (const ConfigError& e) {
      EXPECT_NE(e.message().find("parameters can be offloaded only when they are partitioned"), std::string::npos) << e.message();
    }
  }
  const Plan zero3 = fit_to(strategy_plan("zero3"), topo);
  EXPECT_THROW(params_offloaded(zero3, Offload::nvme, "").validate(topo), ConfigError);
  Plan deep = params_offloaded(zero3, Offload::nvme, "/tmp", 2);
  deep.prefetch = 2;
  try {
    deep.validate(topo);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("needs more buffers than units prefetched (2), got 2"), std::string::npos) << e.message();
  }
  deep.param_offload.buffers = 3;
  EXPECT_NO_THROW(deep.validate(topo));
}

}  // namespace
}  // namespace tierzero
