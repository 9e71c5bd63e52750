#include "load_bench.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "ckpt/state_checkpoint.h"
#include "tierzero/checkpoint.h"
#include "tierzero/data.h"
#include "tierzero/error.h"
#include "tierzero/process_memory.h"
#include "tierzero/sharded_trainer.h"

namespace tierzero::bench {

namespace {
// Every rank's `value`, in world order.
std::vector<std::uint64_t> per_rank(Communicator& world, std::uint64_t value) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(world.size()));
  world.host().all_gather(&value, all.data(), sizeof value, DType::u8);
  return all;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The host bytes of the state's shards (what memory_bytes() counts, less the buffers a step uses).
std::uint64_t shard_bytes(const ShardedTrainer& t) {
  std::uint64_t n = 0;
  for (const auto& [name, bytes] : t.memory_bytes())
    if (name == "params" || name == "bwd_params" || name == "grads" || name == "optim" || name.ends_with("_host")) n += bytes;
  return n;
}
}  // namespace

LoadBenchResult run_load_bench(const TrainConfig& cfg, const Plan& plan, Communicator& world, const LoadBenchOptions& o) {
  const TokenData data = TokenData::load(cfg.data);
  LoadBenchResult r;
  auto t0 = std::chrono::steady_clock::now();
  const std::unique_ptr<StateReader> init = o.init.empty() ? nullptr : open_weights(o.init, cfg.model);
  ShardedTrainer trainer(cfg, plan, world, data, init.get());
  r.build_s = seconds_since(t0);
  r.peak_build = per_rank(world, peak_resident_bytes());
  if (!o.resume.empty()) {
    t0 = std::chrono::steady_clock::now();
    r.resharded = trainer.load_checkpoint(o.resume);
    r.resume_s = seconds_since(t0);
  }
  r.peak_resume = per_rank(world, peak_resident_bytes());
  r.shard_bytes = per_rank(world, shard_bytes(trainer));
  if (!o.save_dir.empty()) {
    t0 = std::chrono::steady_clock::now();
    trainer.save_checkpoint(o.save_dir, 0);
    r.save_s = seconds_since(t0);
  }
  return r;
}

std::string to_json_line(const TrainConfig& cfg, const Plan& plan, const LoadBenchOptions& o, const LoadBenchResult& r) {
  nlohmann::ordered_json j = {{"bench", "load"},
                              {"model", cfg.model.name},
                              {"params", cfg.model.num_params()},
                              {"ranks", r.peak_build.size()},
                              {"plan", plan.describe()},
                              {"param_dtype", std::string(dtype_name(cfg.param_dtype))},
                              {"init", o.init.empty() ? "seed" : o.init},
                              {"resume", o.resume},
                              {"resharded", r.resharded},
                              {"build_s", r.build_s},
                              {"resume_s", r.resume_s},
                              {"save_s", r.save_s},
                              {"peak_rss_build_bytes", r.peak_build},
                              {"peak_rss_bytes", r.peak_resume},
                              {"shard_bytes", r.shard_bytes}};
  return j.dump();
}

std::string write_start_checkpoint(const TrainConfig& cfg, const Plan& plan, const Topology& topo, const std::string& init,
                                   const std::string& dir) {
  const auto t0 = std::chrono::steady_clock::now();
  CheckpointMeta meta;
  meta.model = cfg.model;
  meta.train = cfg;
  meta.plan = plan;
  meta.topology = topo.to_string();
  meta.world_size = topo.size();
  meta.data_origin = cfg.data;
  const std::string step = write_state_checkpoint(dir, meta, *open_weights(init, cfg.model));
  const nlohmann::ordered_json j = {{"bench", "checkpoint"}, {"model", cfg.model.name}, {"ranks", topo.size()}, {"plan", plan.describe()},
                                    {"step_dir", step}, {"seconds", seconds_since(t0)}, {"peak_rss_bytes", peak_resident_bytes()}};
  return j.dump();
}

}  // namespace tierzero::bench
