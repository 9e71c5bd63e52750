// Optimizer offload (Plan::optim_offload) on 1, 3 and 8 ranks: cpu and
// nvme train bit for bit as the state in device memory does, under every
// strategy that keeps optimizer state; a checkpoint saved from the NVMe
// store resumes in memory exactly; memory_bytes says where the state is;
// a directory that cannot hold the swap file is an error naming it.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "mpi_test_util.h"
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
  p.optim_offload = where, p.nvme_path = dir, p.nvme_buffers = buffers;
  return p;
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
      for (int i = 0; i < 4; ++i) {
        const StepStats want = base.step();
        for (ShardedTrainer* t : {&host, &file2, &file3}) {
          const StepStats got = t->step();
          EXPECT_EQ(got.loss, want.loss) << name << " " << dtype_name(dtype) << " step " << i << " " << t->plan().describe();
          EXPECT_EQ(got.grad_norm, want.grad_norm) << name << " step " << i;
        }
      }
      const std::vector<float> w = base.gather_master();
      for (ShardedTrainer* t : {&host, &file2, &file3}) EXPECT_EQ(t->gather_master(), w) << name << " " << t->plan().describe();
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
}

}  // namespace
}  // namespace tierzero
