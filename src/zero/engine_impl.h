// The sharding engine's state, shared by engine.cc (the step) and
// engine_checkpoint.cc (save and load). Internal.
#pragma once
#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "tierzero/backend.h"
#include "tierzero/engine.h"
#include "zero/grad_reducer.h"
#include "zero/shard_layout.h"
#include "zero/unit_fetcher.h"

namespace tierzero {

struct ShardedTrainer::Impl {
  TrainConfig cfg;
  Plan plan;
  Communicator& world;
  Memory& mem;  // the backend's: every MemArray below lives here
  GptLayout layout;
  BatchSampler sampler;
  std::unique_ptr<UnitModel> model;
  DType dtype;
  std::size_t dsize;
  ShardLayout P, B, G, O;
  bool bwd_distinct;
  bool counts_norm;  // this rank adds its gradient shard to the global norm (one rank per cross group)
  std::unique_ptr<Communicator> p_comm, b_comm, g_comm, cross_comm;
  std::unique_ptr<Hierarchy> p_hier, b_hier, g_hier;
  MemArray<std::byte> params_store, bwd_store, gather_send, gather_recv;
  MemArray<float> grads, master, m, v;
  std::vector<ShardSegment> segments;
  std::vector<int> forward_units, backward_units, reduce_order;
  std::unique_ptr<UnitFetcher> fetcher;
  std::unique_ptr<GradReducer> reducer;
  MemArray<float> embed_params, embed_grads, unit_grad;
  std::vector<int> tokens, targets;  // sampled on the host, then uploaded
  MemArray<int> tokens_mem, targets_mem;
  MemArray<std::byte> staging;  // small host collectives go through it (see staged)
  std::int64_t step = 0;
  std::int64_t optim_steps = 0;  // applied updates: AdamW's t (skipped steps do not count)
  float loss_scale = 1.0f;
  int good_steps = 0;
  std::array<std::uint64_t, kNumLevels> last_bytes{};
  std::string sampler_origin;  // the data the sampler reads, recorded in checkpoints

  // init: initial full fp32 parameters (gpt_init of the seed when empty).
  Impl(const TrainConfig& c, const Plan& pl, Communicator& w, const TokenData& data, const std::vector<float>& init,
       const Backend& be);
  // Sets master, m, v and the working parameters from full fp32 host arrays.
  void assign_full(const std::vector<float>& master, const std::vector<float>& m, const std::vector<float>& v);
  // The full array of an optim-partitioned state, on the host (collective).
  std::vector<float> gather_full(const MemArray<float>& shard);
  // A copy of an array on the host.
  template <class T>
  std::vector<T> to_host(const MemArray<T>& a) {
    std::vector<T> h(a.size());
    mem.download(h.data(), a.data(), a.bytes());
    return h;
  }
  // A collective `op` of the world communicator on host bytes, staged
  // through `staging` (a device communicator cannot reach host memory):
  // in_bytes of `in` are uploaded, op(staged in, staged out) runs, and
  // out_bytes of its output are downloaded into `out`.
  void staged(const void* in, std::size_t in_bytes, void* out, std::size_t out_bytes,
              const std::function<void(const std::byte*, std::byte*)>& op);
  std::unique_ptr<Communicator> group_comm(const Partition& level);
  UnitSource source(const ShardLayout& s, const MemArray<std::byte>& store, Hierarchy* h, int bits) const;
  double micro_batch(int micro, float dloss);
  void write_params();
};


}  // namespace tierzero
