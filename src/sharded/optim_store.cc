#include "sharded/optim_store.h"

#include "sharded/host_staging.h"
#include "sharded/nvme_store.h"
#include "tierzero/error.h"

namespace tierzero {

std::vector<std::vector<UnitSegment>> segments_by_unit(const ShardLayout& optim, const std::vector<ShardSegment>& segments) {
  std::vector<std::vector<UnitSegment>> out(optim.shard.size());
  for (const ShardSegment& s : segments) {  // each tensor's run lies inside one unit
    std::size_t u = 0;
    while (u + 1 < out.size() && optim.offset[u + 1] <= s.offset) ++u;
    out[u].push_back({s.offset - optim.offset[u], s.length, s.decay});
  }
  return out;
}

void adamw_unit(const std::vector<UnitSegment>& segments, float* master, const float* g, float* m, float* v, const AdamWConfig& c,
                std::int64_t t, float lr) {
  for (const UnitSegment& s : segments)
    adamw_update(master + s.offset, g + s.offset, m + s.offset, v + s.offset, s.length, c, t, lr, s.decay);
}

namespace {

// none: three arrays in the backend's memory, the update by its StepOps.
class DeviceOptimStore final : public OptimStore {
 public:
  DeviceOptimStore(const ShardLayout& optim, const std::vector<ShardSegment>& segments, Memory& mem, StepOps& step_ops)
      : optim_(optim), segments_(segments), mem_(mem), step_ops_(step_ops) {
    for (MemArray<float>* a : {&master_, &m_, &v_}) a->resize(mem, optim.total);
  }
  void assign_unit(int u, const float* master, const float* m, const float* v) override {
    const std::size_t o = optim_.offset[u], bytes = optim_.shard[u] * sizeof(float);
    mem_.upload(master_.data() + o, master, bytes);
    mem_.upload(m_.data() + o, m, bytes);
    mem_.upload(v_.data() + o, v, bytes);
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
  StateFootprint footprint() const override { return {3 * master_.bytes(), 0, 0}; }

 private:
  const ShardLayout& optim_;
  const std::vector<ShardSegment>& segments_;
  Memory& mem_;
  StepOps& step_ops_;
  MemArray<float> master_, m_, v_;
};

// cpu: three arrays in host memory, the update on the host unit by unit,
// each unit's gradient brought down and its new master taken up (nothing
// copied on the CPU backend, whose memory this is).
class HostOptimStore final : public OptimStore {
 public:
  HostOptimStore(const ShardLayout& optim, const std::vector<ShardSegment>& segments, Memory& mem)
      : optim_(optim), units_(segments_by_unit(optim, segments)), staging_(mem, 1, optim.largest_shard() * sizeof(float), true) {
    for (MemArray<float>* a : {&master_, &m_, &v_}) a->resize(host_memory(), optim.total);
  }
  void assign_unit(int u, const float* master, const float* m, const float* v) override {
    const std::size_t o = optim_.offset[u], n = optim_.shard[u];
    std::copy(master, master + n, master_.data() + o);
    std::copy(m, m + n, m_.data() + o);
    std::copy(v, v + n, v_.data() + o);
  }
  void read(float* master, float* m, float* v) override {
    std::copy(master_.data(), master_.data() + optim_.total, master);
    std::copy(m_.data(), m_.data() + optim_.total, m);
    std::copy(v_.data(), v_.data() + optim_.total, v);
  }
  void update(const float* grads, const AdamWConfig& c, std::int64_t t, float lr, const UnitUpdated& updated) override {
    for (std::size_t u = 0; u < units_.size(); ++u) {
      const std::size_t o = optim_.offset[u], bytes = optim_.shard[u] * sizeof(float);
      const auto* g = static_cast<const float*>(staging_.to_host(grads + o, bytes));
      adamw_unit(units_[u], master_.data() + o, g, m_.data() + o, v_.data() + o, c, t, lr);
      updated(static_cast<int>(u), static_cast<const float*>(staging_.to_backend(0, master_.data() + o, bytes)));
    }
  }
  StateFootprint footprint() const override { return {staging_.backend_bytes(), 3 * master_.bytes() + staging_.host_bytes(), 0}; }

 private:
  const ShardLayout& optim_;
  std::vector<std::vector<UnitSegment>> units_;
  HostStaging staging_;
  MemArray<float> master_, m_, v_;
};

}  // namespace

std::unique_ptr<OptimStore> make_optim_store(const Plan& plan, const ShardLayout& optim, const std::vector<ShardSegment>& segments,
                                             Memory& mem, StepOps& step_ops, int rank) {
  switch (plan.optim_offload.device) {
    case Offload::none: return std::make_unique<DeviceOptimStore>(optim, segments, mem, step_ops);
    case Offload::cpu: return std::make_unique<HostOptimStore>(optim, segments, mem);
    case Offload::nvme: return make_nvme_store(plan, optim, segments, mem, rank);
  }
  TZ_THROW(Error, "unknown offload");
}

}  // namespace tierzero
