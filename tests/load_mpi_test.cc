// Loading unit by unit on 1, 3 and 8 ranks (tierzero/state_reader.h): a
// trainer built from weights files (tierzero's names, Hugging Face GPT-2
// with its transposed Conv1D weights, Llama in bf16 shards) or resuming a
// checkpoint of another rank count, topology and strategy saves, on every
// rank, byte for byte the files a reference builds from the whole state
// (the master, m and v sliced by ShardLayout), under every strategy, with
// units held whole and with both states in swap files; a checkpoint of
// this run's own layout resumes its own bytes; write_state_checkpoint
// writes what a run of that layout saves. Each rank reads only its
// slices (bytes_read: exactly the elements its shards hold). A corrupt,
// truncated or missing shard and a NaN in a weights file fail on every
// rank with the same message naming the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "config_error.h"
#include "ckpt/safetensors.h"
#include "ckpt/state_checkpoint.h"
#include "mpi_test_util.h"
#include "plan/shard_layout.h"
#include "tierzero/checkpoint.h"
#include "tierzero/error.h"
#include "tierzero/hugging_face.h"
#include "tierzero/mpi.h"
#include "tierzero/sharded_trainer.h"

namespace tierzero {
namespace {
namespace fs = std::filesystem;

// The whole state, as a StateReader.
struct FullState final : StateReader {
  std::vector<float> part[3];
  void read(StatePart p, std::size_t first, std::size_t count, float* out) override {
    std::copy_n(part[static_cast<int>(p)].begin() + static_cast<std::ptrdiff_t>(first), count, out);
  }
  std::uint64_t bytes_read() const override { return 0; }
  bool has_moments() const override { return true; }
};

// Distinct values for master, m and v (v positive, as AdamW's is).
FullState some_state(const GptConfig& model) {
  const GptLayout layout(model);
  FullState s;
  for (int k = 0; k < 3; ++k) {
    s.part[k].resize(layout.num_params());
    gpt_init(layout, 100 + k, s.part[k].data());
  }
  for (float& x : s.part[2]) x = x * x;
  return s;
}

// The reference: the two files rank `rank` of `plan` on `topo` saves holding `state`, sliced element by element.
std::pair<std::string, std::string> expected_files(const GptConfig& model, const Plan& plan, const Topology& topo, int rank, DType dtype,
                                                   const FullState& state) {
  const GptLayout layout(model);
  const StateLayouts s = StateLayouts::make(layout, topo, plan, rank);
  const auto shard = [&](const ShardLayout& l, const std::vector<float>& full) {
    std::vector<float> out(l.total, 0.0f);
    for (std::size_t u = 0; u < layout.units().size(); ++u)
      for (std::size_t i = 0; i < l.valid(layout, static_cast<int>(u)); ++i)
        out[l.offset[u] + i] = full[layout.units()[u].offset + l.begin(static_cast<int>(u)) + i];
    return out;
  };
  const std::vector<float> p32 = shard(s.params, state.part[0]);
  std::string params(p32.size() * dtype_size(dtype), '\0');
  from_f32(dtype, p32.data(), params.data(), p32.size());
  std::string optim;
  for (const auto& full : state.part) {
    const std::vector<float> o = shard(s.optim, full);
    optim.append(reinterpret_cast<const char*>(o.data()), o.size() * sizeof(float));
  }
  return {params, optim};
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A directory shared by every rank, removed with everything in it when the test ends.
struct SharedDir {
  Communicator& world;
  fs::path path = test::shared_temp_dir();
  ~SharedDir() {
    world.barrier();
    if (world.rank() == 0) fs::remove_all(path);
  }
};

// Saves `t` under dir and expects this rank's two files to be `want`.
void expect_saves(ShardedTrainer& t, Communicator& world, const fs::path& dir, const std::pair<std::string, std::string>& want,
                  const std::string& what) {
  const fs::path step = t.save_checkpoint(dir.string(), 0);
  const int r = world.rank();
  EXPECT_TRUE(file_bytes(step / rank_file_name(r, "params")) == want.first) << what << ": params of rank " << r;
  EXPECT_TRUE(file_bytes(step / rank_file_name(r, "optim")) == want.second) << what << ": optim of rank " << r;
}

// Every strategy on the job's layout, and the placements and persistence that change how a unit is written.
std::vector<Plan> plans(const Topology& topo, const std::string& swap) {
  std::vector<Plan> out;
  for (const char* name : {"zero3", "zeropp", "hier3", "mics", "zero2", "ddp"}) out.push_back(fit_to(strategy_plan(name), topo));
  Plan whole = fit_to(strategy_plan("zeropp"), topo);
  whole.persist_threshold = 20480;  // gpt-tiny's embedding and head, llama-tiny's head
  out.push_back(whole);
  Plan files = fit_to(strategy_plan("zero3"), topo);
  files.optim_offload = {Offload::nvme, swap, 2};
  files.param_offload = {Offload::nvme, swap, 2};
  out.push_back(files);
  return out;
}

// The weights file kinds: tierzero's names (F32), Hugging Face GPT-2 (F32, transposed) or Llama (bf16 in shards).
struct WeightsFile {
  const char* model;
  const char* kind;
  bool bf16;
};
constexpr WeightsFile kFiles[] = {{"gpt-tiny", "tierzero", false}, {"gpt-tiny", "hf", false}, {"llama-tiny", "hf", true}, {"llama-tiny", "tierzero", false}};

// Writes `f` (rank 0) holding `master`; returns its path.
std::string write_weights(Communicator& world, const fs::path& dir, const WeightsFile& f, const GptConfig& model,
                          const std::vector<float>& master) {
  const fs::path path = dir / (std::string(f.model) + "-" + f.kind);
  if (world.rank() == 0) {
    if (std::string(f.kind) == "tierzero") {
      SafeTensorsFile out;
      const GptLayout layout(model);
      for (const TensorInfo& t : layout.tensors())
        out.tensors[t.name] = make_f32_tensor(std::vector<std::int64_t>(t.shape.begin(), t.shape.end()), master.data() + t.offset);
      write_safetensors(path.string(), out);
    } else if (model.family() == "gpt2") {
      write_hf_gpt2(model, master, path.string());
    } else {
      write_hf_llama(model, master, path.string(), {f.bf16 ? DType::bf16 : DType::f32, 20000, std::nullopt});
    }
  }
  world.barrier();
  return path.string();
}

TEST(Loading, InitFromWeightsFilesSavesTheReferenceShards) {
  const TokenData data = TokenData::builtin();
  auto world = mpi_world(test::standard_layout());
  const SharedDir dir{*world};
  int n = 0;
  for (const WeightsFile& f : kFiles) {
    const TrainConfig cfg = test::tiny_run(2, 1, 16, 4, DType::bf16, f.model);
    FullState want = some_state(cfg.model);
    const std::string path = write_weights(*world, dir.path, f, cfg.model, want.part[0]);
    if (f.bf16) {  // the file holds the master rounded to bf16
      std::vector<std::uint16_t> b(want.part[0].size());
      from_f32(DType::bf16, want.part[0].data(), b.data(), b.size());
      to_f32(DType::bf16, b.data(), want.part[0].data(), b.size());
    }
    std::fill(want.part[1].begin(), want.part[1].end(), 0.0f);  // a start has no moments
    std::fill(want.part[2].begin(), want.part[2].end(), 0.0f);
    for (const Plan& plan : plans(world->topology(), (dir.path / "swap").string())) {
      const std::string what = std::string(f.model) + " " + f.kind + " " + plan.describe();
      const auto init = open_weights(path, cfg.model);
      ShardedTrainer t(cfg, plan, *world, data, init.get());
      const auto expected = expected_files(cfg.model, plan, world->topology(), world->rank(), cfg.param_dtype, want);
      expect_saves(t, *world, dir.path / ("init" + std::to_string(n++)), expected, what);
    }
  }
}

// Checkpoints of layouts other than the job's: (topology, ranks, strategy).
struct Saved {
  const char* topology;
  int ranks;
  const char* strategy;
};
constexpr Saved kSaved[] = {{"package=2,node=2,world=2", 8, "hier3"}, {"node=5", 5, "zero3"}, {"node=2,world=3", 6, "mics"},
                            {"world=1", 1, "ddp"}, {"node=4,world=2", 8, "zero2"}};

CheckpointMeta meta_of(const TrainConfig& cfg, const Plan& plan, const Topology& topo) {
  CheckpointMeta m;
  m.step = 7, m.optim_steps = 7;
  m.model = cfg.model;
  m.train = cfg;
  m.plan = plan;
  m.topology = topo.to_string();
  m.world_size = topo.size();
  m.data_origin = "builtin";
  return m;
}

TEST(Loading, ReshardedResumeSavesTheReferenceShards) {
  const TokenData data = TokenData::builtin();
  auto world = mpi_world(test::standard_layout());
  const SharedDir dir{*world};
  int n = 0, pair = 0;
  for (const char* model : test::kTinyModels) {
    const TrainConfig cfg = test::tiny_run(2, 1, 16, 20, DType::bf16, model);
    FullState state = some_state(cfg.model);
    for (const Saved& saved : kSaved) {
      const std::vector<Plan> all = plans(world->topology(), (dir.path / "swap").string());
      std::vector<Plan> half;  // every other plan, alternating: each plan resumes half the saved layouts of each model
      for (std::size_t j = pair++ % 2; j < all.size(); j += 2) half.push_back(all[j]);
      const Topology topo = Topology::parse(saved.topology, saved.ranks);
      const fs::path from = dir.path / ("saved" + std::to_string(n));
      if (world->rank() == 0) write_state_checkpoint(from.string(), meta_of(cfg, fit_to(strategy_plan(saved.strategy), topo), topo), state);
      world->barrier();
      for (const Plan& plan : half) {
        const std::string what = std::string(model) + " from " + saved.strategy + " on " + saved.topology + " to " + plan.describe();
        const auto expected = expected_files(cfg.model, plan, world->topology(), world->rank(), cfg.param_dtype, state);
        const bool same = saved.ranks == world->size() && topo == world->topology() &&
                          fit_to(strategy_plan(saved.strategy), topo).same_sharding(plan);
        ShardedTrainer t(cfg, plan, *world, data);
        EXPECT_EQ(t.load_checkpoint(from.string()), !same) << what;
        EXPECT_EQ(t.steps_done(), 7) << what;
        expect_saves(t, *world, dir.path / ("resumed" + std::to_string(n++)), expected, what);
      }
    }
  }
}

// A checkpoint of the job's own layout: each rank reads its own files, and
// write_state_checkpoint wrote exactly what the trainer saves again.
TEST(Loading, SameLayoutResumesItsOwnBytes) {
  const TokenData data = TokenData::builtin();
  auto world = mpi_world(test::standard_layout());
  const SharedDir dir{*world};
  const TrainConfig cfg = test::tiny_run(2, 1, 16, 20, DType::bf16, "llama-tiny");
  FullState state = some_state(cfg.model);
  int n = 0;
  for (const Plan& plan : plans(world->topology(), (dir.path / "swap").string())) {
    const fs::path from = dir.path / ("saved" + std::to_string(n));
    if (world->rank() == 0) write_state_checkpoint(from.string(), meta_of(cfg, plan, world->topology()), state);
    world->barrier();
    const auto expected = expected_files(cfg.model, plan, world->topology(), world->rank(), cfg.param_dtype, state);
    const fs::path step = from / step_dir_name(7);
    EXPECT_TRUE(file_bytes(step / rank_file_name(world->rank(), "params")) == expected.first) << plan.describe();
    EXPECT_TRUE(file_bytes(step / rank_file_name(world->rank(), "optim")) == expected.second) << plan.describe();
    ShardedTrainer t(cfg, plan, *world, data);
    EXPECT_FALSE(t.load_checkpoint(from.string())) << plan.describe();
    expect_saves(t, *world, dir.path / ("again" + std::to_string(n++)), expected, "same layout " + plan.describe());
  }
}

// Elements of unit slices a rank's zero3 shards read: the optim slice of each unit (and the params slice when it is not inside it).
std::uint64_t slice_elements(const GptLayout& layout, const StateLayouts& s) {
  std::uint64_t n = 0;
  for (int u = 0; u < static_cast<int>(layout.units().size()); ++u) n += s.optim.valid(layout, u);
  return n;
}

TEST(Loading, EachRankReadsOnlyItsSlices) {
  const TokenData data = TokenData::builtin();
  auto world = mpi_world(test::standard_layout());
  const SharedDir dir{*world};
  const TrainConfig cfg = test::tiny_run(2, 1, 16, 20, DType::bf16, "llama-tiny");
  const GptLayout layout(cfg.model);
  const Plan plan = fit_to(strategy_plan("zero3"), world->topology());  // params and optim alike: one read per element
  const std::uint64_t mine = slice_elements(layout, StateLayouts::make(layout, world->topology(), plan, world->rank()));
  FullState state = some_state(cfg.model);
  // An F32 weights file: 4 bytes per element of this rank's slices, nothing else.
  const std::string path = write_weights(*world, dir.path, {"llama-tiny", "tierzero", false}, cfg.model, state.part[0]);
  auto weights = open_weights(path, cfg.model);
  ShardedTrainer a(cfg, plan, *world, data, weights.get());
  EXPECT_EQ(weights->bytes_read(), 4 * mine);
  // A checkpoint of 8 ranks, resharded: master, m and v of those slices.
  const Topology eight = Topology::parse("package=2,node=2,world=2", 8);
  const fs::path from = dir.path / "saved";
  if (world->rank() == 0) write_state_checkpoint(from.string(), meta_of(cfg, fit_to(strategy_plan("hier3"), eight), eight), state);
  world->barrier();
  CheckpointReader ckpt(from.string());
  ShardedTrainer b(cfg, plan, *world, data, &ckpt);
  EXPECT_EQ(ckpt.bytes_read(), 3 * 4 * mine);
  if (world->size() > 1) {
    EXPECT_LT(mine, layout.num_params());
  }
}


TEST(Loading, DamagedFilesFailOnEveryRankNamingTheFile) {
  const TokenData data = TokenData::builtin();
  auto world = mpi_world(test::standard_layout());
  const SharedDir dir{*world};
  const TrainConfig cfg = test::tiny_run(2, 1, 16, 20, DType::bf16, "gpt-tiny");
  const Plan plan = fit_to(strategy_plan("zero3"), world->topology());
  FullState state = some_state(cfg.model);
  const Topology five = Topology::parse("node=5", 5);
  const fs::path from = dir.path / "saved";
  if (world->rank() == 0) write_state_checkpoint(from.string(), meta_of(cfg, fit_to(strategy_plan("zero3"), five), five), state);
  const fs::path shard = from / step_dir_name(7) / rank_file_name(4, "optim");
  const auto damaged = [&](const std::function<void()>& damage, const std::string& fragment) {
    world->barrier();
    if (world->rank() == 0) damage();
    world->barrier();
    ShardedTrainer t(cfg, plan, *world, data);
    const std::string e = test::message_of<FormatError>([&] { t.load_checkpoint(from.string()); });
    EXPECT_NE(e.find("rank-00004.optim' is " + fragment), std::string::npos) << e;
  };
  damaged([&] { std::fstream(shard, std::ios::in | std::ios::out | std::ios::binary).seekp(100).put('X'); }, "corrupt");
  damaged([&] { fs::resize_file(shard, 100); }, "truncated");
  damaged([&] { fs::remove(shard); }, "missing");
  // A NaN in the weights: refused on every rank, naming the tensor.
  std::vector<float> master = state.part[0];
  const GptLayout layout(cfg.model);
  const TensorInfo& fc = layout.tensor("h.1.fc_w");  // [4C, C]: stored transposed, [C, 4C]
  master[fc.offset + 77] = NAN;
  const std::size_t stored = (77 % fc.shape[1]) * fc.shape[0] + 77 / fc.shape[1];
  const std::string path = write_weights(*world, dir.path, {"gpt-tiny", "hf", false}, cfg.model, master);
  const auto init = open_weights(path, cfg.model);
  const std::string e = test::message_of<FormatError>([&] { ShardedTrainer t(cfg, plan, *world, data, init.get()); });
  EXPECT_NE(e.find("tensor 'transformer.h.1.mlp.c_fc.weight' holds a non-finite value (nan at element " + std::to_string(stored) + ")"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace tierzero
