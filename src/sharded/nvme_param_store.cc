#include "sharded/nvme_param_store.h"

#include <cstring>

#include "ckpt/page_buffer.h"
#include "sharded/host_staging.h"
#include "sharded/swap_file.h"

namespace tierzero {

namespace {

class NvmeParamStore final : public ParamStore {
 public:
  NvmeParamStore(const OffloadPlacement& where, const ShardLayout& layout, DType dtype, Memory& mem, std::size_t slots, int rank)
      : layout_(layout), dsize_(dtype_size(dtype)), blocks_(SwapBlocks::of(layout.shard, dsize_)),
        buffers_(static_cast<std::size_t>(where.buffers)), last_job_(buffers_.size(), 0), slots_(slots),
        staging_(mem, slots + 1, layout.largest_shard() * dsize_) {
    for (PageBuffer<std::byte>& b : buffers_) b.resize(blocks_.largest);
    file_ = std::make_unique<SwapFile>(where.nvme_path, "params", "offload_param", rank, blocks_.total);
  }

  void read(std::byte* shard) override {
    for (std::size_t u = 0; u < blocks_.offset.size(); ++u) {
      const std::size_t b = next_buffer();
      file_->wait(last_job_[b] = file_->submit(false, buffers_[b].data(), blocks_.bytes[u], blocks_.offset[u]));
      std::memcpy(shard + layout_.offset[u] * dsize_, buffers_[b].data(), layout_.shard[u] * dsize_);
    }
  }
  void begin_pass(const std::vector<int>& units) override {
    pass_ = units;
    ready_.assign(units.size(), 0);
    for (std::size_t i = 0; i < units.size() && i < buffers_.size(); ++i) read_ahead(i);
  }
  const std::byte* unit(std::size_t i) override {
    file_->wait(ready_[i], pass_[i]);
    const std::size_t bytes = layout_.shard[static_cast<std::size_t>(pass_[i])] * dsize_;
    return static_cast<const std::byte*>(staging_.to_backend(i % slots_, buffers_[i % buffers_.size()].data(), bytes));
  }
  void release(std::size_t i) override {
    if (i + buffers_.size() < pass_.size()) read_ahead(i + buffers_.size());
  }
  std::byte* writable(int) override {
    writing_ = free_buffer();
    return static_cast<std::byte*>(staging_.backend_buffer(slots_, buffers_[writing_].data()));
  }
  void commit(int u) override {
    staging_.from_backend(slots_, buffers_[writing_].data(), layout_.shard[u] * dsize_);
    last_job_[writing_] = file_->submit(true, buffers_[writing_].data(), blocks_.bytes[u], blocks_.offset[u]);
  }
  StateFootprint footprint() const override {
    return {staging_.backend_bytes(), buffers_.size() * blocks_.largest + staging_.host_bytes(), blocks_.total};
  }

 private:
  // The i-th unit of the pass into buffer i % count, queued behind that buffer's last job (one queue: in order).
  void read_ahead(std::size_t i) {
    const std::size_t b = i % buffers_.size();
    const auto u = static_cast<std::size_t>(pass_[i]);
    ready_[i] = last_job_[b] = file_->submit(false, buffers_[b].data(), blocks_.bytes[u], blocks_.offset[u]);
  }
  std::size_t next_buffer() { return next_++ % buffers_.size(); }
  // The next buffer, once its last read or write is done.
  std::size_t free_buffer() {
    const std::size_t b = next_buffer();
    file_->wait(last_job_[b]);
    return b;
  }

  const ShardLayout& layout_;
  std::size_t dsize_;
  SwapBlocks blocks_;
  std::vector<PageBuffer<std::byte>> buffers_;
  std::vector<std::uint64_t> last_job_;  // per buffer
  std::unique_ptr<SwapFile> file_;
  std::vector<int> pass_;
  std::vector<std::uint64_t> ready_;  // per unit of the pass: its read
  std::size_t next_ = 0, writing_ = 0;
  std::size_t slots_;  // staging buffers for reads (one more for writes)
  HostStaging staging_;
};

}  // namespace

std::unique_ptr<ParamStore> make_nvme_param_store(const OffloadPlacement& where, const ShardLayout& layout, DType dtype, Memory& mem,
                                                  std::size_t slots, int rank) {
  return std::make_unique<NvmeParamStore>(where, layout, dtype, mem, slots, rank);
}

}  // namespace tierzero
