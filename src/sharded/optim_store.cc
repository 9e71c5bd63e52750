#include "sharded/optim_store.h"

#include "sharded/nvme_store.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {

// none and cpu: three arrays in one Memory, the update by its StepOps.
class MemoryOptimStore final : public OptimStore {
 public:
  MemoryOptimStore(const ShardLayout& optim, const std::vector<ShardSegment>& segments, Memory& mem, StepOps& step_ops, bool host)
      : optim_(optim), segments_(segments), mem_(mem), step_ops_(step_ops), host_(host) {
    for (MemArray<float>* a : {&master_, &m_, &v_}) a->resize(mem, optim.total);
  }
  void assign(const float* master, const float* m, const float* v) override {
    mem_.upload(master_.data(), master, master_.bytes());
    mem_.upload(m_.data(), m, m_.bytes());
    mem_.upload(v_.data(), v, v_.bytes());
  }
  void read(float* master, float* m, float* v) override {
    mem_.download(master, master_.data(), master_.bytes());
    mem_.download(m, m_.data(), m_.bytes());
    mem_.download(v, v_.data(), v_.bytes());
  }
  void update(const float* grads, const AdamWConfig& c, std::int64_t t, float lr, const UnitUpdated& updated) override {
    for (const ShardSegment& s : segments_)
      step_ops_.adamw(master_.data() + s.offset, grads + s.offset, m_.data() + s.offset, v_.data() + s.offset, s.length, c, t, lr, s.decay);
    for (std::size_t u = 0; u < optim_.shard.size(); ++u) updated(static_cast<int>(u), master_.data() + optim_.offset[u]);
  }
  StateFootprint footprint() const override {
    const std::uint64_t bytes = 3 * master_.bytes();
    return host_ ? StateFootprint{0, bytes, 0} : StateFootprint{bytes, 0, 0};
  }

 private:
  const ShardLayout& optim_;
  const std::vector<ShardSegment>& segments_;
  Memory& mem_;
  StepOps& step_ops_;
  bool host_;
  MemArray<float> master_, m_, v_;
};

}  // namespace

std::unique_ptr<OptimStore> make_optim_store(const Plan& plan, const ShardLayout& optim, const std::vector<ShardSegment>& segments,
                                             Memory& mem, StepOps& step_ops, int rank) {
  const bool host_backend = &mem == &host_memory();
  switch (plan.optim_offload.device) {
    case Offload::none: return std::make_unique<MemoryOptimStore>(optim, segments, mem, step_ops, false);
    case Offload::cpu:
      TZ_CHECK(host_backend, ConfigError,
               "offload_optimizer cpu: the host-side optimizer is built for the CPU backend so far; with --device cuda leave "
               "offload_optimizer at none");
      return std::make_unique<MemoryOptimStore>(optim, segments, mem, step_ops, true);
    case Offload::nvme:
      TZ_CHECK(host_backend, ConfigError,
               "offload_optimizer nvme: the NVMe store is built for the CPU backend so far; with --device cuda leave "
               "offload_optimizer at none");
      return make_nvme_store(plan, optim, segments, rank);
  }
  TZ_THROW(Error, "unknown offload");
}

}  // namespace tierzero
