#include "sharded/param_store.h"

#include "sharded/nvme_param_store.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {

// none and cpu: one array in one Memory.
class MemoryParamStore final : public ParamStore {
 public:
  MemoryParamStore(const ShardLayout& layout, DType dtype, Memory& mem, bool host)
      : layout_(layout), dsize_(dtype_size(dtype)), mem_(mem), host_(host) {
    data_.resize(mem, layout.total * dsize_);
    mem.zero(data_.data(), data_.bytes());
  }
  void assign(const std::byte* shard) override { mem_.upload(data_.data(), shard, data_.bytes()); }
  void read(std::byte* shard) override { mem_.download(shard, data_.data(), data_.bytes()); }
  void begin_pass(const std::vector<int>& units) override { units_ = units; }  // capacity is reused after the first pass
  const std::byte* unit(std::size_t i) override { return data_.data() + layout_.offset[units_[i]] * dsize_; }
  void release(std::size_t) override {}
  std::byte* writable(int u) override { return data_.data() + layout_.offset[u] * dsize_; }
  void commit(int) override {}
  StateFootprint footprint() const override { return host_ ? StateFootprint{0, data_.bytes(), 0} : StateFootprint{data_.bytes(), 0, 0}; }

 private:
  const ShardLayout& layout_;
  std::size_t dsize_;
  Memory& mem_;
  bool host_;
  MemArray<std::byte> data_;
  std::vector<int> units_;
};

}  // namespace

std::unique_ptr<ParamStore> make_param_store(const OffloadPlacement& where, const ShardLayout& layout, DType dtype, Memory& mem,
                                             int rank) {
  const bool host_backend = &mem == &host_memory();
  switch (where.device) {
    case Offload::none: return std::make_unique<MemoryParamStore>(layout, dtype, mem, false);
    case Offload::cpu:
      TZ_CHECK(host_backend, ConfigError,
               "offload_param cpu: parameters in host memory are built for the CPU backend so far; with --device cuda leave "
               "offload_param at none");
      return std::make_unique<MemoryParamStore>(layout, dtype, mem, true);
    case Offload::nvme:
      TZ_CHECK(host_backend, ConfigError,
               "offload_param nvme: the NVMe store is built for the CPU backend so far; with --device cuda leave offload_param "
               "at none");
      return make_nvme_param_store(where, layout, dtype, rank);
  }
  TZ_THROW(Error, "unknown offload");
}

}  // namespace tierzero
