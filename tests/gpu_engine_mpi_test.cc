// The sharding engine on a CUDA device with the NCCL communicator, against
// the same engine on the CPU with MPI (one rank per GPU; run by
// scripts/gpu_check.sh, skipped where no GPU exists):
//   - every element-wise step of gpu::device_memory() gives host_memory()'s
//     bits on random, never-zero inputs (sum_squares: another summation order);
//   - ShardedTrainer with cuda_backend() follows the CPU's losses under the
//     plans, with fp32 GEMMs (rounding only), and allocates no device memory
//     after its first step;
//   - a checkpoint written from the GPU resumes on the CPU;
//   - the optimizer state and the parameters offloaded to the host or to
//     NVMe files (staged through copies: sharded/host_staging.h) train bit
//     for bit as in device memory, with no device allocation after the
//     first step;
//   - pipelined hops (hop_chunk_bytes) over NCCL, each hop's communicator on
//     its own stream, train bit for bit as whole hops and move the traffic
//     model's bytes (4 GPUs or more: two levels);
//   - tensor parallelism (and sequence parallelism) on the device, its
//     collectives over NCCL on the engine's one schedule, follows the same
//     mesh on the CPU (2 GPUs or more).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <random>

#include "gpu_test_util.h"
#include "mpi_test_util.h"
#include "backend/backend_impl.h"
#include "tierzero/sharded_trainer.h"
#include "gpu/gpu_quant.h"
#include "tierzero/gpu_backend.h"
#include "tierzero/mesh.h"
#include "gpu/gpu_ops.h"
#include "tierzero/mpi.h"
#include "tierzero/order_check.h"
#include "tierzero/nccl.h"
#include "sim/traffic_model.h"

namespace tierzero {
namespace {

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(0.05f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = gen() % 2 ? d(gen) : -d(gen);
  return v;
}

// The bytes `op` leaves in a buffer of `out_bytes`, run on backend `be` from host inputs.
template <class Op>
std::vector<std::byte> on(const Backend& be, const std::vector<std::vector<std::byte>>& inputs, std::size_t out_bytes,
                          std::vector<std::byte> out_init, Op op) {
  Memory& mem = *be.memory;
  std::vector<MemArray<std::byte>> in;
  for (const auto& h : inputs) {
    in.emplace_back(mem, h.size());
    mem.upload(in.back().data(), h.data(), h.size());
  }
  MemArray<std::byte> out(mem, out_bytes);
  out_init.resize(out_bytes);
  mem.upload(out.data(), out_init.data(), out_bytes);
  std::vector<void*> ptrs;
  for (auto& a : in) ptrs.push_back(a.data());
  op(be, ptrs, out.data());
  std::vector<std::byte> result(out_bytes);
  mem.download(result.data(), out.data(), out_bytes);
  return result;
}

std::vector<std::byte> bytes_of(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The job's GPUs as two levels where there are enough, so the hierarchical paths run on the device too.
Topology gpu_layout() {
  const int w = test::world_size();
  return w >= 4 && w % 2 == 0 ? Topology::parse("package=2,world=" + std::to_string(w / 2), w)
                              : Topology::parse("world=" + std::to_string(w), w);
}

TEST(GpuEngine, DeviceMemoryGivesHostMemorysBits) {
  TZ_NEED_GPU();
  use_node_local_gpu();  // before this process's first GPU context, as nccl_world would
  const std::size_t n = 10007;
  const auto x = bytes_of(random_floats(n, 1)), y = bytes_of(random_floats(n, 2));
  const Backend& dev = gpu::cuda_backend();
  const Backend& host = cpu_backend();
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    const std::size_t tb = n * dtype_size(t);
    // from_f32, then back to_f32, add_to_f32 and divide, in type t.
    auto convert = [&](const Backend& b, std::vector<void*>& in, std::byte* out) { b.ops->from_f32(t, static_cast<float*>(in[0]), out, n); };
    const auto narrow = on(host, {x}, tb, {}, convert);
    EXPECT_EQ(on(dev, {x}, tb, {}, convert), narrow) << dtype_name(t);
    auto widen = [&](const Backend& b, std::vector<void*>& in, std::byte* out) { b.ops->to_f32(t, in[0], reinterpret_cast<float*>(out), n); };
    EXPECT_EQ(on(dev, {narrow}, n * 4, {}, widen), on(host, {narrow}, n * 4, {}, widen)) << dtype_name(t);
    auto add = [&](const Backend& b, std::vector<void*>& in, std::byte* out) { b.ops->add_to_f32(t, in[0], reinterpret_cast<float*>(out), n); };
    EXPECT_EQ(on(dev, {narrow}, n * 4, y, add), on(host, {narrow}, n * 4, y, add)) << dtype_name(t);
    auto divide = [&](const Backend& b, std::vector<void*>&, std::byte* out) { b.ops->divide(out, n, t, 6); };
    EXPECT_EQ(on(dev, {}, tb, narrow, divide), on(host, {}, tb, narrow, divide)) << dtype_name(t);
    for (int bits : {8, 4}) {
      const QuantSpec q{bits, bits == 4, 128};
      const std::size_t packed = quant_packed_bytes(n, q);
      auto quant = [&](const Backend& b, std::vector<void*>& in, std::byte* out) { b.ops->quantize(in[0], t, n, q, out); };
      const auto p = on(host, {narrow}, packed, {}, quant);
      EXPECT_EQ(on(dev, {narrow}, packed, {}, quant), p) << dtype_name(t) << " int" << bits;
      auto dequant = [&](const Backend& b, std::vector<void*>& in, std::byte* out) { b.ops->dequantize(in[0], n, q, out, t); };
      EXPECT_EQ(on(dev, {p}, tb, {}, dequant), on(host, {p}, tb, {}, dequant)) << dtype_name(t) << " int" << bits;
      auto dequant_add = [&](const Backend& b, std::vector<void*>& in, std::byte* out) {
        b.ops->dequantize_add(in[0], n, q, reinterpret_cast<float*>(out));
      };
      EXPECT_EQ(on(dev, {p}, n * 4, y, dequant_add), on(host, {p}, n * 4, y, dequant_add)) << dtype_name(t) << " int" << bits;
    }
  }
  auto scale = [&](const Backend& b, std::vector<void*>&, std::byte* out) { b.step->scale(reinterpret_cast<float*>(out), n, 0.37f); };
  EXPECT_EQ(on(dev, {}, n * 4, x, scale), on(host, {}, n * 4, x, scale));
  // AdamW: p, g, m, v in one buffer of 4n floats.
  std::vector<float> state = random_floats(4 * n, 3);
  for (std::size_t i = 3 * n; i < 4 * n; ++i) state[i] = std::abs(state[i]);  // v >= 0
  auto adamw = [&](const Backend& b, std::vector<void*>&, std::byte* out) {
    float* f = reinterpret_cast<float*>(out);
    b.step->adamw(f, f + n, f + 2 * n, f + 3 * n, n, AdamWConfig{}, 7, 3e-4f, true);
  };
  EXPECT_EQ(on(dev, {}, 16 * n, bytes_of(state), adamw), on(host, {}, 16 * n, bytes_of(state), adamw));
  MemArray<float> buf(*dev.memory, n);
  dev.memory->upload(buf.data(), x.data(), x.size());
  const double want = host.step->sum_squares(reinterpret_cast<const float*>(x.data()), n);
  EXPECT_NEAR(dev.step->sum_squares(buf.data(), n), want, 1e-12 * want);
}

TEST(GpuEngine, ShardedTrainerOnCudaFollowsTheCpu) {
  TZ_NEED_GPU();
  const Topology topo = gpu_layout();
  auto nccl = nccl_world(topo);
  CheckedCommunicator gpu_world(*nccl);  // the collective order is checked after every step
  auto cpu_world = mpi_world(topo);
  const TokenData data = TokenData::builtin();
  for (const char* model : test::kTinyModels)
  for (const char* name : {"zero3", "zeropp", "hier3", "ddp"}) {
    SCOPED_TRACE(model);
    TrainConfig cfg = test::tiny_run(4, 2, 64, 6, DType::bf16, model);
    cfg.matmul = MatmulType::fp32;  // the CPU's arithmetic on both, up to summation order
    const Plan plan = fit_to(strategy_plan(name), topo);
    ShardedTrainer cpu(cfg, plan, *cpu_world, data);
    ShardedTrainer gpu(cfg, plan, gpu_world, data, {}, gpu::cuda_backend());
    // The same bytes per state; the activations differ by the attention scratch only: the device
    // keeps every head's score gradients (gpu::attention_scratch: H x T x T floats), the CPU one head's (T x T).
    const auto gm = gpu.memory_bytes(), cm = cpu.memory_bytes();
    ASSERT_EQ(gm.size(), cm.size());
    const std::uint64_t T = cfg.effective_seq_len(), H = cfg.model.heads;
    for (std::size_t k = 0; k < gm.size(); ++k) {
      ASSERT_EQ(gm[k].first, cm[k].first);
      const std::uint64_t extra = gm[k].first == "activations" ? (H - 1) * T * T * sizeof(float) : 0;
      EXPECT_EQ(gm[k].second, cm[k].second + extra) << name << " " << gm[k].first;
    }
    for (int i = 0; i < 3; ++i) {
      const StepStats c = cpu.step(), g = gpu.step();
      EXPECT_NO_THROW(gpu_world.verify(std::string(name) + " step " + std::to_string(i)));
      EXPECT_NEAR(g.loss, c.loss, 1e-4 * c.loss) << name << " step " << i;
      EXPECT_NEAR(g.grad_norm, c.grad_norm, 1e-3 * c.grad_norm) << name << " step " << i;
    }
    const std::uint64_t before = gpu::device_allocations();  // every thread's: compute, schedule, NCCL
    gpu.step(), cpu.step();
    EXPECT_EQ(gpu::device_allocations(), before) << name << ": the steady-state step allocated device memory";
    const std::vector<float> wc = cpu.gather_master(), wg = gpu.gather_master();
    double worst = 0;
    for (std::size_t i = 0; i < wc.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(wc[i]) - wg[i]));
    EXPECT_LT(worst, 1e-4) << name;
    if (std::string(name) != "hier3") continue;
    const std::string dir = test::shared_temp_dir();
    gpu.save_checkpoint(dir, 0);
    ShardedTrainer resumed(cfg, plan, *cpu_world, data);
    resumed.load_checkpoint(dir);
    EXPECT_EQ(resumed.steps_done(), cpu.steps_done());
    const double l = resumed.step().loss, c = cpu.step().loss;
    EXPECT_NEAR(l, c, 1e-4 * c) << "a GPU checkpoint resumed on the CPU";
  }
}

TEST(GpuEngine, OffloadedStatesOnCudaTrainAsInDeviceMemory) {
  TZ_NEED_GPU();
  const Topology topo = gpu_layout();
  auto nccl = nccl_world(topo);
  const TokenData data = TokenData::builtin();
  const std::string dir = test::shared_temp_dir();
  for (const char* name : {"zero3", "zeropp"}) {
    TrainConfig cfg = test::tiny_run(4, 2, 64, 4, DType::bf16);
    cfg.schedule.warmup = 1;
    const Plan plan = fit_to(strategy_plan(name), topo);
    Plan host = plan, file = plan;
    host.optim_offload.device = host.param_offload.device = Offload::cpu;
    file.optim_offload = file.param_offload = {Offload::nvme, dir, 3};
    ShardedTrainer base(cfg, plan, *nccl, data, {}, gpu::cuda_backend());
    ShardedTrainer on_host(cfg, host, *nccl, data, {}, gpu::cuda_backend());
    ShardedTrainer in_files(cfg, file, *nccl, data, {}, gpu::cuda_backend());
    for (int i = 0; i < 4; ++i) {
      const std::uint64_t before = gpu::device_allocations();
      const StepStats want = base.step();
      for (ShardedTrainer* t : {&on_host, &in_files}) {
        const StepStats got = t->step();
        EXPECT_EQ(got.loss, want.loss) << name << " step " << i << " " << t->plan().describe();
        EXPECT_EQ(got.grad_norm, want.grad_norm) << name << " step " << i << " " << t->plan().describe();
      }
      if (i > 0) {
        EXPECT_EQ(gpu::device_allocations(), before) << name << ": a steady-state step allocated device memory";
      }
    }
    const std::vector<float> want = base.gather_master();
    EXPECT_EQ(on_host.gather_master(), want) << name;
    EXPECT_EQ(in_files.gather_master(), want) << name;
  }
}

// The engine on the GPU twice, the same plan, data and seed, with gradient
// clipping (the norm's sum of squares) and repeated tokens (the built-in
// corpus): identical losses, norms and weights, bit for bit.
TEST(GpuEngine, TwoIdenticalRunsGiveIdenticalBits) {
  TZ_NEED_GPU();
  const Topology topo = gpu_layout();
  auto nccl = nccl_world(topo);
  const TokenData data = TokenData::builtin();
  for (const char* name : {"zero3", "hier3"}) {
    TrainConfig cfg = test::tiny_run(4, 2, 64, 4, DType::bf16);
    cfg.grad_clip = 0.5f;
    const Plan plan = fit_to(strategy_plan(name), topo);
    ShardedTrainer a(cfg, plan, *nccl, data, {}, gpu::cuda_backend());
    ShardedTrainer b(cfg, plan, *nccl, data, {}, gpu::cuda_backend());
    for (int i = 0; i < 4; ++i) {
      const StepStats x = a.step(), y = b.step();
      EXPECT_EQ(x.loss, y.loss) << name << " step " << i;
      EXPECT_EQ(x.grad_norm, y.grad_norm) << name << " step " << i;
    }
    EXPECT_EQ(a.gather_master(), b.gather_master()) << name;
  }
}

// Issue 54's pipelined hops on the device: zero3 and hier3 with hierarchical gathers and reductions (three_level,
// over the layout's two levels) cut into 1 KiB chunks (several per unit and bucket of gpt-tiny) against the same
// plans whole, on the same NCCL world.
TEST(GpuEngine, PipelinedHopsTrainAsWholeHops) {
  TZ_NEED_GPU();
  if (test::world_size() < 4) GTEST_SKIP() << "pipelined hops need two levels: 4 GPUs or more";
  const Topology topo = gpu_layout();
  auto nccl = nccl_world(topo);
  const TokenData data = TokenData::builtin();
  TrainConfig cfg = test::tiny_run(4, 2, 64, 4, DType::bf16);
  for (const char* name : {"zero3", "hier3"}) {
    Plan whole = fit_to(strategy_plan(name), topo);
    whole.gather = whole.reduce = Decomposition::three_level;
    Plan cut = whole;
    cut.hop_chunk_bytes = 1024;
    ShardedTrainer a(cfg, whole, *nccl, data, {}, gpu::cuda_backend());
    ShardedTrainer b(cfg, cut, *nccl, data, {}, gpu::cuda_backend());
    for (int i = 0; i < 3; ++i) EXPECT_EQ(a.step().loss, b.step().loss) << name << " step " << i;
    EXPECT_EQ(b.last_step_bytes(), total_bytes(step_transfers(cut, topo, cfg, nccl->rank()))) << name;
    EXPECT_EQ(a.gather_master(), b.gather_master()) << name;
  }
}

// Issue 52's tensor parallelism on the device: TP 2 on the layout's innermost level, with and without sequence
// parallelism, zero3 over the data ranks, the model's collectives over the tensor group's NCCL communicator, queued
// on the engine's one schedule with the data-parallel ones (Backend::concurrent_queues), against the same mesh on
// the CPU with MPI, fp32 GEMMs (rounding only): the CPU's losses and gradient norms over 3 steps, its weights after
// them, and no device allocation in a steady-state step. gpt-tiny and llama-tiny (GQA, SwiGLU, an untied
// vocabulary-parallel head).
TEST(GpuEngine, TensorParallelOnCudaFollowsTheCpu) {
  TZ_NEED_GPU();
  if (test::world_size() % 2 != 0) GTEST_SKIP() << "tensor parallelism of degree 2 needs an even number of GPUs, 2 or more";
  const Topology topo = gpu_layout();
  auto nccl = nccl_world(topo);
  auto cpu_world = mpi_world(topo);
  const TokenData data = TokenData::builtin();
  for (const char* model : test::kTinyModels)
    for (const bool sp : {false, true}) {
      SCOPED_TRACE(std::string(model) + (sp ? " at tp 2 with sequence parallelism" : " at tp 2"));
      TrainConfig cfg = test::tiny_run(4, 2, 64, 5, DType::bf16, model);
      cfg.matmul = MatmulType::fp32;
      const MeshShape shape{2, std::nullopt, sp};
      const Mesh gpu_mesh(*nccl, shape), cpu_mesh(*cpu_world, shape);
      const Plan plan = fit_to(strategy_plan("zero3"), gpu_mesh.data_topology());
      ShardedTrainer cpu(cfg, plan, cpu_mesh, data);
      ShardedTrainer gpu(cfg, plan, gpu_mesh, data, {}, gpu::cuda_backend());
      for (int i = 0; i < 3; ++i) {
        const StepStats c = cpu.step(), g = gpu.step();
        EXPECT_NEAR(g.loss, c.loss, 1e-4 * c.loss) << "step " << i;
        EXPECT_NEAR(g.grad_norm, c.grad_norm, 1e-3 * c.grad_norm) << "step " << i;
      }
      const std::uint64_t before = gpu::device_allocations();
      gpu.step(), cpu.step();
      EXPECT_EQ(gpu::device_allocations(), before) << "the steady-state step allocated device memory";
      const std::vector<float> wc = cpu.gather_master(), wg = gpu.gather_master();
      ASSERT_EQ(wc.size(), wg.size());
      double worst = 0;
      for (std::size_t i = 0; i < wc.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(wc[i]) - wg[i]));
      EXPECT_LT(worst, 1e-4);
    }
}

}  // namespace
}  // namespace tierzero
