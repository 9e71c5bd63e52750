#include "sharded/param_store.h"

#include "sharded/host_staging.h"
#include "sharded/nvme_param_store.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {

// none: one array in the backend's memory.
class DeviceParamStore final : public ParamStore {
 public:
  DeviceParamStore(const ShardLayout& layout, DType dtype, Memory& mem) : layout_(layout), dsize_(dtype_size(dtype)), mem_(mem) {
    data_.resize(mem, layout.total * dsize_);
    mem.zero(data_.data(), data_.bytes());
  }
  void read(std::byte* shard) override { mem_.download(shard, data_.data(), data_.bytes()); }
  void begin_pass(const std::vector<int>& units) override { units_ = units; }  // capacity is reused after the first pass
  const std::byte* unit(std::size_t i) override { return data_.data() + layout_.offset[units_[i]] * dsize_; }
  void release(std::size_t) override {}
  std::byte* writable(int u) override { return data_.data() + layout_.offset[u] * dsize_; }
  void commit(int) override {}
  StateFootprint footprint() const override { return {data_.bytes(), 0, 0}; }

 private:
  const ShardLayout& layout_;
  std::size_t dsize_;
  Memory& mem_;
  MemArray<std::byte> data_;
  std::vector<int> units_;
};

// cpu: one array in host memory; on a device a pass uploads each unit's
// shard into one of `slots` staging buffers, and a write goes through one
// more (host_staging.h); on the CPU backend nothing is copied.
class HostParamStore final : public ParamStore {
 public:
  HostParamStore(const ShardLayout& layout, DType dtype, Memory& mem, std::size_t slots)
      : layout_(layout), dsize_(dtype_size(dtype)), slots_(slots), staging_(mem, slots + 1, layout.largest_shard() * dsize_) {
    data_.resize(host_memory(), layout.total * dsize_);
    host_memory().zero(data_.data(), data_.bytes());
  }
  void read(std::byte* shard) override { std::copy(data_.data(), data_.data() + data_.bytes(), shard); }
  void begin_pass(const std::vector<int>& units) override { units_ = units; }  // capacity is reused after the first pass
  const std::byte* unit(std::size_t i) override {
    const auto u = static_cast<std::size_t>(units_[i]);
    return static_cast<const std::byte*>(staging_.to_backend(i % slots_, at(u), layout_.shard[u] * dsize_));
  }
  void release(std::size_t) override {}
  std::byte* writable(int u) override { return static_cast<std::byte*>(staging_.backend_buffer(slots_, at(u))); }
  void commit(int u) override { staging_.from_backend(slots_, at(u), layout_.shard[u] * dsize_); }
  StateFootprint footprint() const override { return {staging_.backend_bytes(), data_.bytes() + staging_.host_bytes(), 0}; }

 private:
  std::byte* at(std::size_t u) { return data_.data() + layout_.offset[u] * dsize_; }
  const ShardLayout& layout_;
  std::size_t dsize_, slots_;
  HostStaging staging_;
  MemArray<std::byte> data_;
  std::vector<int> units_;
};

}  // namespace

std::unique_ptr<ParamStore> make_param_store(const OffloadPlacement& where, const ShardLayout& layout, DType dtype, Memory& mem,
                                             int prefetch, int rank) {
  const auto slots = static_cast<std::size_t>(prefetch) + 1;  // the units a pass holds at once
  switch (where.device) {
    case Offload::none: return std::make_unique<DeviceParamStore>(layout, dtype, mem);
    case Offload::cpu: return std::make_unique<HostParamStore>(layout, dtype, mem, slots);
    case Offload::nvme: return make_nvme_param_store(where, layout, dtype, mem, slots, rank);
  }
  TZ_THROW(Error, "unknown offload");
}

}  // namespace tierzero
