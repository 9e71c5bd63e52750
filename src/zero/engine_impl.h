// The sharding engine's state, shared by engine.cc (the step) and
// engine_checkpoint.cc (save and load). Internal.
#pragma once
#include <array>
#include <memory>
#include <vector>

#include "tierzero/engine.h"
#include "zero/grad_reducer.h"
#include "zero/shard_layout.h"
#include "zero/unit_fetcher.h"

namespace tierzero {

struct ShardedTrainer::Impl {
  TrainConfig cfg;
  Plan plan;
  Communicator& world;
  GptLayout layout;
  BatchSampler sampler;
  GptModel<float> model;
  DType dtype;
  std::size_t dsize;
  ShardLayout P, B, G, O;
  bool bwd_distinct;
  bool counts_norm;  // this rank adds its gradient shard to the global norm (one rank per cross group)
  std::unique_ptr<Communicator> p_comm, b_comm, g_comm, cross_comm;
  std::unique_ptr<Hierarchy> p_hier, b_hier, g_hier;
  std::vector<std::byte> params_store, bwd_store, gather_send, gather_recv;
  std::vector<float> grads, master, m, v;
  std::vector<ShardSegment> segments;
  std::vector<int> forward_units, backward_units, reduce_order;
  std::unique_ptr<UnitFetcher> fetcher;
  std::unique_ptr<GradReducer> reducer;
  std::vector<float> embed_params, embed_grads, unit_grad;
  std::vector<int> tokens, targets;
  std::int64_t step = 0;
  std::int64_t optim_steps = 0;  // applied updates: AdamW's t (skipped steps do not count)
  float loss_scale = 1.0f;
  int good_steps = 0;
  std::array<std::uint64_t, kNumLevels> last_bytes{};
  std::string sampler_origin;  // the data the sampler reads, recorded in checkpoints

  // init: initial full fp32 parameters (gpt_init of the seed when empty).
  Impl(const TrainConfig& c, const Plan& pl, Communicator& w, const TokenData& data, const std::vector<float>& init);
  // Sets master, m, v and the working parameters from full fp32 arrays.
  void assign_full(const std::vector<float>& master, const std::vector<float>& m, const std::vector<float>& v);
  // The full array of an optim-partitioned state (collective).
  std::vector<float> gather_full(const std::vector<float>& shard);
  std::unique_ptr<Communicator> group_comm(const Partition& level);
  UnitSource source(const ShardLayout& s, const std::vector<std::byte>& store, Hierarchy* h, int bits) const;
  double micro_batch(int micro, float dloss);
  void write_params();
};


}  // namespace tierzero
