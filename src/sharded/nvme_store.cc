#include "sharded/nvme_store.h"

#include "ckpt/page_buffer.h"
#include "sharded/host_staging.h"
#include "sharded/swap_file.h"

namespace tierzero {

namespace {

class NvmeOptimStore final : public OptimStore {
 public:
  NvmeOptimStore(const Plan& plan, const ShardLayout& optim, const std::vector<ShardSegment>& segments, Memory& mem, int rank)
      : optim_(optim), blocks_(SwapBlocks::of(optim.shard, kOptimBytesPerParam)), segments_(segments_by_unit(optim, segments)),
        staging_(mem, 1, optim.largest_shard() * sizeof(float), true) {
    buffers_.resize(static_cast<std::size_t>(plan.optim_offload.buffers));
    for (PageBuffer<float>& b : buffers_) b.resize(blocks_.largest / sizeof(float));
    file_ = std::make_unique<SwapFile>(plan.optim_offload.nvme_path, "optim", "offload_optimizer", rank, blocks_.total);
  }

  void assign_unit(int u, const float* master, const float* m, const float* v) override {  // through a buffer, written at once
    PageBuffer<float>& b = buffers_[0];
    const std::size_t n = optim_.shard[static_cast<std::size_t>(u)];
    std::copy(master, master + n, b.data());
    std::copy(m, m + n, b.data() + n);
    std::copy(v, v + n, b.data() + 2 * n);
    file_->wait(file_->submit(true, b.data(), blocks_.bytes[static_cast<std::size_t>(u)], blocks_.offset[static_cast<std::size_t>(u)]));
  }
  void read(float* master, float* m, float* v) override {
    for (std::size_t u = 0; u < segments_.size(); ++u) {
      PageBuffer<float>& b = buffers_[0];
      file_->wait(file_->submit(false, b.data(), blocks_.bytes[u], blocks_.offset[u]));
      const std::size_t n = optim_.shard[u], o = optim_.offset[u];
      std::copy(b.data(), b.data() + n, master + o);
      std::copy(b.data() + n, b.data() + 2 * n, m + o);
      std::copy(b.data() + 2 * n, b.data() + 3 * n, v + o);
    }
  }
  void update(const float* grads, const AdamWConfig& c, std::int64_t t, float lr, const UnitUpdated& updated) override {
    const std::size_t nb = buffers_.size(), nu = segments_.size();
    std::vector<std::uint64_t> ready(nu, 0);
    const auto read_ahead = [&](std::size_t u) {  // into buffer u % nb, after that buffer's last write (one queue: in order)
      if (u < nu) ready[u] = file_->submit(false, buffers_[u % nb].data(), blocks_.bytes[u], blocks_.offset[u]);
    };
    for (std::size_t u = 0; u + 1 < nb; ++u) read_ahead(u);
    std::uint64_t last = 0;
    for (std::size_t u = 0; u < nu; ++u) {
      file_->wait(ready[u], static_cast<int>(u));
      float* b = buffers_[u % nb].data();
      const std::size_t n = optim_.shard[u];
      const auto* g = static_cast<const float*>(staging_.to_host(grads + optim_.offset[u], n * sizeof(float)));
      adamw_unit(segments_[u], b, g, b + n, b + 2 * n, c, t, lr);
      updated(static_cast<int>(u), static_cast<const float*>(staging_.to_backend(0, b, n * sizeof(float))));
      last = file_->submit(true, b, blocks_.bytes[u], blocks_.offset[u]);
      read_ahead(u + nb - 1);  // into the buffer unit u - 1 used, queued behind its write
    }
    file_->wait(last);
  }
  StateFootprint footprint() const override {
    std::uint64_t host = 0;
    for (const PageBuffer<float>& b : buffers_) host += b.size() * sizeof(float);
    return {staging_.backend_bytes(), host + staging_.host_bytes(), blocks_.total};
  }

 private:
  const ShardLayout& optim_;
  SwapBlocks blocks_;
  std::vector<std::vector<UnitSegment>> segments_;  // per unit
  HostStaging staging_;
  std::vector<PageBuffer<float>> buffers_;
  std::unique_ptr<SwapFile> file_;
};

}  // namespace

std::unique_ptr<OptimStore> make_nvme_store(const Plan& plan, const ShardLayout& optim, const std::vector<ShardSegment>& segments,
                                            Memory& mem, int rank) {
  return std::make_unique<NvmeOptimStore>(plan, optim, segments, mem, rank);
}

}  // namespace tierzero
