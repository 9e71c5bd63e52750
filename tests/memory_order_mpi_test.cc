// The ordering contract of core/memory.h, checked without a GPU.
//
// DeferredMemory behaves like a device stream: every call is queued on the
// calling thread and runs only when that thread fences (or downloads), or
// when another thread waits for a mark of it; an upload reads its host
// source at once and writes it only then. The hierarchical collectives
// and the sharding engine on this memory must give bit for bit what they
// give on host memory: a missing fence before a collective or a missing
// mark before a cross-thread hand-off shows up as stale data here, as it
// would on a device.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <memory>
#include <vector>

#include "mpi_test_util.h"
#include "backend/backend_impl.h"
#include "model/host_ops.h"
#include "tierzero/sharded_trainer.h"
#include "comm/hier/hierarchy.h"
#include "tierzero/mpi.h"

namespace tierzero {
namespace {

// The three interfaces of a backend's state (memory, element work, optimizer step) on one deferred queue.
class DeferredMemory final : public Memory, public ElementOps, public StepOps {
 public:
  void* allocate(std::size_t bytes) override { return host().allocate(bytes); }
  void release(void* p) noexcept override { host().release(p); }
  void copy(void* dst, const void* src, std::size_t bytes) override { later([=] { host().copy(dst, src, bytes); }); }
  void upload(void* dst, const void* host_src, std::size_t bytes) override {  // the source is read now, the write is queued
    ++uploads;
    auto snapshot = std::make_shared<std::vector<std::byte>>(static_cast<const std::byte*>(host_src),
                                                             static_cast<const std::byte*>(host_src) + bytes);
    later([=] { host().copy(dst, snapshot->data(), bytes); });
  }
  void download(void* host_dst, const void* src, std::size_t bytes) override {
    ++downloads;
    fence();
    host().download(host_dst, src, bytes);
  }
  void zero(void* dst, std::size_t bytes) override { later([=] { host().zero(dst, bytes); }); }
  void to_f32(DType from, const void* src, float* dst, std::size_t n) override {
    later([=] { host_ops().to_f32(from, src, dst, n); });
  }
  void from_f32(DType to, const float* src, void* dst, std::size_t n) override {
    later([=] { host_ops().from_f32(to, src, dst, n); });
  }
  void add_to_f32(DType t, const void* src, float* acc, std::size_t n) override {
    later([=] { host_ops().add_to_f32(t, src, acc, n); });
  }
  void divide(void* buf, std::size_t n, DType t, int divisor) override { later([=] { host_ops().divide(buf, n, t, divisor); }); }
  void scale(float* buf, std::size_t n, float factor) override { later([=] { host_step().scale(buf, n, factor); }); }
  double sum_squares(const float* buf, std::size_t n) override {
    fence();
    return host_step().sum_squares(buf, n);
  }
  void quantize(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed) override {
    later([=] { host_ops().quantize(src, t, n, s, packed); });
  }
  void dequantize(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t) override {
    later([=] { host_ops().dequantize(packed, n, s, dst, t); });
  }
  void dequantize_add(const void* packed, std::size_t n, const QuantSpec& s, float* acc) override {
    later([=] { host_ops().dequantize_add(packed, n, s, acc); });
  }
  void adamw(float* p, const float* g, float* m, float* v, std::size_t n, const AdamWConfig& c, std::int64_t t, float lr,
             bool decay) override {
    later([=] { host_step().adamw(p, g, m, v, n, c, t, lr, decay); });
  }
  void fence() override { queue().run_until(~std::uint64_t{0}); }
  MemMark mark() override {
    Queue& q = queue();
    std::lock_guard<std::mutex> lock(q.mutex);
    return {&q, q.done + q.jobs.size()};
  }
  // Runs the marking thread's queued work up to the mark, here: one valid
  // schedule of a stream waiting for another's event.
  void wait_for(const MemMark& m) override {
    if (m.handle) static_cast<Queue*>(m.handle)->run_until(m.seq);
  }
  std::atomic<int> uploads{0}, downloads{0};  // host <-> "device" transfers so far

 private:
  // One thread's "stream": work in order, run by whoever fences or waits.
  struct Queue {
    std::mutex mutex;
    std::deque<std::function<void()>> jobs;
    std::uint64_t done = 0;  // jobs run so far
    void run_until(std::uint64_t seq) {
      std::lock_guard<std::mutex> lock(mutex);
      for (; done < seq && !jobs.empty(); ++done) {
        jobs.front()();
        jobs.pop_front();
      }
    }
  };
  static Memory& host() { return host_memory(); }
  static ElementOps& host_ops() { return host_element_ops(); }
  static StepOps& host_step() { return *cpu_backend().step; }
  static Queue& queue() {
    thread_local Queue q;
    return q;
  }
  static void later(std::function<void()> job) {
    Queue& q = queue();
    std::lock_guard<std::mutex> lock(q.mutex);
    q.jobs.push_back(std::move(job));
  }
};

DeferredMemory& deferred() {
  static DeferredMemory mem;
  return mem;
}

// The CPU model, run where its inputs are ready: after the thread's queued work.
class FencedModel final : public UnitModel {
 public:
  FencedModel(const GptLayout& layout, const TrainConfig& cfg, TpGroup<float> tp_group) : m_(layout, cfg, std::move(tp_group)) {}
  void embed_forward(const float* e, const int* tok) override { deferred().fence(), m_.embed_forward(e, tok); }
  void block_forward(int l, const float* b) override { deferred().fence(), m_.block_forward(l, b); }
  double head_forward(const float* e, const float* h, const int* tgt) override {
    deferred().fence();
    return m_.head_forward(e, h, tgt);
  }
  void head_backward(const float* e, const float* h, float* de, float* dh, const int* tgt, float dloss) override {
    deferred().fence(), m_.head_backward(e, h, de, dh, tgt, dloss);
  }
  void block_backward(int l, const float* b, float* db) override { deferred().fence(), m_.block_backward(l, b, db); }
  void embed_backward(float* de, const int* tok) override { deferred().fence(), m_.embed_backward(de, tok); }
  std::size_t activation_bytes() const override { return m_.activation_bytes(); }
  MatmulType matmul() const override { return m_.matmul(); }

 private:
  GptUnitModel<HostOps> m_;
};

const Backend& deferred_backend() {
  static const Backend backend{"deferred", &deferred(), &deferred(), &deferred(),
                                [](const GptLayout& layout, const TrainConfig& cfg, TpGroup<float> tp_group) {
                                 return std::unique_ptr<UnitModel>(std::make_unique<FencedModel>(layout, cfg, std::move(tp_group)));
                               }};
  return backend;
}

std::vector<std::byte> values(int rank, std::size_t n, DType t) {
  std::vector<std::byte> v(n * dtype_size(t));
  for (std::size_t i = 0; i < n; ++i) test::store(t, v.data(), i, test::value(rank, i, t) * 0.37);
  return v;
}

TEST(MemoryOrder, HierarchicalCollectivesOnDeferredMemoryMatchHostMemory) {
  const int w = test::world_size();
  const std::size_t n = 700;  // several quantisation blocks per chunk
  const QuantSpec q{8, false, 64};
  const HopBits bits = parse_hop_bits("package=16,node=8,world=4");
  for (const Topology& topo : test::all_layouts(w)) {
    auto world = mpi_world(topo);
    Hierarchy on_host(*world, three_level_hops(), host_memory(), host_element_ops());
    Hierarchy on_deferred(*world, three_level_hops(), deferred(), deferred());
    const std::vector<std::byte> in = values(world->rank(), n * w, DType::bf16);
    // The result of each collective, given the hierarchy and its buffers.
    auto run = [&](Hierarchy& h, Memory& mem, int which) {
      MemArray<std::byte> send(mem, in.size()), recv(mem, in.size() * w);
      mem.upload(send.data(), in.data(), in.size());
      mem.zero(recv.data(), recv.bytes());  // the collectives write a prefix of it
      switch (which) {
        case 0: h.all_gather(send.data(), recv.data(), n, DType::bf16); break;
        case 1: h.reduce_scatter(send.data(), recv.data(), n, DType::bf16, ReduceOp::avg); break;
        case 2: h.all_reduce(send.data(), recv.data(), n * w, DType::bf16, ReduceOp::avg); break;
        case 3: h.all_gather_quantized(send.data(), recv.data(), n, DType::bf16, q); break;
        case 4: h.reduce_scatter_quantized(send.data(), recv.data(), n, DType::bf16, ReduceOp::avg, bits, q); break;
      }
      std::vector<std::byte> out(recv.bytes());
      mem.download(out.data(), recv.data(), out.size());
      return out;
    };
    for (int which = 0; which < 5; ++which)
      EXPECT_EQ(run(on_deferred, deferred(), which), run(on_host, host_memory(), which))
          << "collective " << which << " on " << topo.to_string();
  }
}

TEST(MemoryOrder, EngineOnDeferredMemoryMatchesHostMemoryBitForBit) {
  const TokenData data = TokenData::builtin();
  const TrainConfig cfg = test::tiny_run(2, 2, 32, 3);
  const int w = test::world_size();
  const Topology topo = w == 8 ? Topology::parse("package=2,node=2,world=2", 8) : Topology::parse("world=" + std::to_string(w), w);
  auto world = mpi_world(topo);
  for (const char* name : {"zero3", "zeropp", "hier3", "mics", "ddp", "zero1"}) {
    const Plan plan = fit_to(strategy_plan(name), topo);
    ShardedTrainer a(cfg, plan, *world, data);
    ShardedTrainer b(cfg, plan, *world, data, {}, deferred_backend());
    for (int i = 0; i < 3; ++i) {
      const StepStats sa = a.step(), sb = b.step();
      EXPECT_EQ(sa.loss, sb.loss) << name << " step " << i;
      EXPECT_EQ(sa.grad_norm, sb.grad_norm) << name << " step " << i;
    }
    EXPECT_EQ(a.gather_master(), b.gather_master()) << name;
    if (std::string(name) != "hier3") continue;
    // A checkpoint written from deferred memory resumes the same trajectory.
    const std::string dir = test::shared_temp_dir();
    b.save_checkpoint(dir, 0);
    ShardedTrainer c(cfg, plan, *world, data, {}, deferred_backend());
    c.load_checkpoint(dir);
    EXPECT_EQ(c.step().loss, a.step().loss);
  }
}

// The step's control values (loss, norm) travel on the host communicator:
// the only transfers between the host and the engine's memory in a step
// are the tokens and targets of each micro-batch.
TEST(MemoryOrder, AStepTransfersOnlyTokensAndTargets) {
  const TokenData data = TokenData::builtin();
  const TrainConfig cfg = test::tiny_run(1, 3, 16, 2);
  const int w = test::world_size();
  const Topology topo = Topology::parse("world=" + std::to_string(w), w);
  auto world = mpi_world(topo);
  for (const char* name : {"zero3", "mics", "ddp"}) {
    ShardedTrainer t(cfg, fit_to(strategy_plan(name), topo), *world, data, {}, deferred_backend());
    const int up = deferred().uploads, down = deferred().downloads;
    t.step();
    EXPECT_EQ(deferred().uploads - up, 2 * cfg.grad_accum) << name;
    EXPECT_EQ(deferred().downloads - down, 0) << name;
  }
}

}  // namespace
}  // namespace tierzero
