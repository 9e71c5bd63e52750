// ShardedTrainer::save_checkpoint / load_checkpoint (tierzero/checkpoint.h).
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <utility>

#include "ckpt/checkpoint_writer.h"
#include "tierzero/checkpoint.h"
#include "tierzero/error.h"
#include "tierzero/flight_recorder.h"
#include "sharded/faults.h"
#include "sharded/sharded_trainer_impl.h"

namespace tierzero {

namespace fs = std::filesystem;

namespace {
// Writes the snapshot's two shard files into the temporary directory (fsynced) and records their sizes and CRCs.
void write_shards(ShardedTrainer::Impl::PendingSave& p, int rank) {
  try {
    const fs::path tmp = CheckpointWriter::temporary(p.dir, p.name);
    const std::string pfile = (tmp / rank_file_name(rank, "params")).string();
    if (faults().killed_in_save(rank)) {
      write_file_synced(pfile, p.params.data(), p.params.size() / 2);
      raise(SIGKILL);
    }
    write_file_synced(pfile, p.params.data(), p.params.size());
    write_file_synced((tmp / rank_file_name(rank, "optim")).string(), p.optim.data(), p.optim.size() * sizeof(float));
    p.record[0] = p.params.size(), p.record[1] = crc32_of(p.params.data(), p.params.size());
    p.record[2] = p.optim.size() * sizeof(float), p.record[3] = crc32_of(p.optim.data(), p.optim.size() * sizeof(float));
  } catch (const Error& e) {
    p.error = e.message();
  }
  p.written = true;
}
}  // namespace

// 1. Rank 0 prepares the temporary directory; everyone learns whether it could.
// Then every rank takes its snapshot (what the writer turns into files).
std::unique_ptr<ShardedTrainer::Impl::PendingSave> ShardedTrainer::Impl::begin_pending_save(const std::string& dir, int keep) {
  const FlightPhaseScope tagged(FlightPhase::checkpoint);
  flight_activity(FlightActivity::checkpoint_write);
  auto p = std::make_unique<PendingSave>();
  p->dir = dir, p->name = step_dir_name(step), p->keep = keep;
  p->step = step, p->optim_steps = optim_steps, p->loss_scale = loss_scale, p->good_steps = good_steps;
  float status = 0;
  std::string problem;
  if (mesh.world().rank() == 0) {
    problem = CheckpointWriter::prepare(dir, p->name);
    status = problem.empty() ? 0.0f : 1.0f;
  }
  control_sum(&status, 1);  // rank 0's status: the others add zero
  TZ_CHECK(status == 0.0f, FormatError, problem.empty() ? "rank 0 cannot create the checkpoint directory under '" + dir + "'" : problem);
  p->params.swap(snapshot_params), p->optim.swap(snapshot_optim);  // returned by finish_save
  p->params.resize(states.params_bytes(dtype));
  params_store->read(p->params.data());
  p->optim.resize(3 * states.optim.total);
  optim->read(p->optim.data(), p->optim.data() + states.optim.total, p->optim.data() + 2 * states.optim.total);
  return p;
}

// 2. Every rank's writer has finished: whether all succeeded, and their records.
// 3. Rank 0 writes meta.json, renames the directory, updates `latest`, prunes.
std::string ShardedTrainer::Impl::finish_save(PendingSave& p) {
  const FlightPhaseScope tagged(FlightPhase::checkpoint);
  if (p.writer.joinable()) p.writer.join();
  snapshot_params.swap(p.params), snapshot_optim.swap(p.optim);  // for the next save
  Communicator& w = mesh.world();  // one pair of shard files per world rank
  if (!p.error.empty()) std::fprintf(stderr, "tierzero: rank %d: %s\n", w.world_rank(w.rank()), p.error.c_str());
  float failed = p.error.empty() ? 0.0f : 1.0f;
  control_sum(&failed, 1);
  std::vector<std::uint64_t> records(4 * static_cast<std::size_t>(w.size()));
  control_gather(p.record, records.data(), sizeof p.record);
  if (failed > 0) {
    if (w.rank() == 0) CheckpointWriter::abandon(p.dir, p.name);
    TZ_THROW(FormatError, "checkpoint at step " + std::to_string(p.step) + " could not be written under '" + p.dir +
                              "' (see the rank messages above); earlier checkpoints are intact");
  }
  float status = 0;
  if (w.rank() == 0) {
    try {
      CheckpointMeta meta;
      meta.step = p.step;
      meta.optim_steps = p.optim_steps;
      meta.model = cfg.model;
      meta.train = cfg;
      meta.plan = plan;
      meta.topology = w.topology().to_string();
      meta.world_size = w.size();
      meta.tp = mesh.tp();
      if (mesh.tp() > 1) meta.tp_level = level_name(mesh.tp_level());
      meta.loss_scale = p.loss_scale;
      meta.good_steps = p.good_steps;
      meta.data_origin = sampler_origin;
      for (int k = 0; k < w.size(); ++k) {
        const std::uint64_t* rec = records.data() + 4 * k;
        meta.files.push_back({rank_file_name(k, "params"), rec[0], static_cast<std::uint32_t>(rec[1])});
        meta.files.push_back({rank_file_name(k, "optim"), rec[2], static_cast<std::uint32_t>(rec[3])});
      }
      writer.commit(p.dir, p.name, meta, p.keep, warnings);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tierzero: %s\n", e.what());
      status = 1;
    }
  }
  control_sum(&status, 1);  // rank 0's status: the others add zero
  TZ_CHECK(status == 0.0f, FormatError, "checkpoint at step " + std::to_string(p.step) + " could not be completed under '" + p.dir + "'");
  return (fs::path(p.dir) / p.name).string();
}

std::string ShardedTrainer::save_checkpoint(const std::string& dir, int keep) {
  Impl& s = *impl_;
  complete_save();  // at most one save in flight
  const auto p = s.begin_pending_save(dir, keep);
  write_shards(*p, s.me());
  return s.finish_save(*p);
}

void ShardedTrainer::begin_save(const std::string& dir, int keep) {
  Impl& s = *impl_;
  complete_save();  // at most one save in flight
  s.pending_save = s.begin_pending_save(dir, keep);
  Impl::PendingSave& p = *s.pending_save;
  p.writer = std::thread([&p, rank = s.me()] {
    // The lowest CPU priority for this thread only (Linux: a thread has its own nice value): on ranks that
    // share cores the writer takes what training leaves; its fsyncs wait on the disk, not on the CPU.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
    write_shards(p, rank);
  });
}

std::string ShardedTrainer::complete_save() {
  Impl& s = *impl_;
  if (!s.pending_save) return "";
  const std::unique_ptr<Impl::PendingSave> p = std::move(s.pending_save);
  return s.finish_save(*p);
}

bool ShardedTrainer::step_boundary(bool stop) {
  Impl& s = *impl_;
  const FlightPhaseScope tagged(FlightPhase::optimizer_step);
  // Every rank has a save in flight or none (begin_save is collective), so all decide alike.
  float flags[2] = {stop ? 1.0f : 0.0f, s.pending_save && !s.pending_save->written ? 1.0f : 0.0f};
  s.control_sum(flags, 2);
  if (s.pending_save && flags[1] == 0) complete_save();
  return flags[0] > 0;
}

std::vector<std::string> ShardedTrainer::take_warnings() { return std::exchange(impl_->warnings, {}); }

bool ShardedTrainer::save_in_flight() const { return impl_->pending_save != nullptr; }

bool ShardedTrainer::load_checkpoint(const std::string& path) {
  Impl& s = *impl_;
  const FlightPhaseScope tagged(FlightPhase::checkpoint);
  Communicator& w = s.mesh.world();
  std::string problem;
  bool same_layout = false;
  try {
    CheckpointReader ckpt(path);
    const CheckpointMeta& meta = ckpt.meta();
    const GptConfig& mine = s.cfg.model;
    const GptConfig& theirs = meta.model;
    TZ_CHECK(mine.same_architecture(theirs), FormatError,
             "checkpoint '" + ckpt.dir() + "' is for model " + theirs.describe() + "; this run trains " + mine.describe());
    same_layout = meta.tp == s.mesh.tp() && (meta.tp == 1 || meta.tp_level == level_name(s.mesh.tp_level())) && meta.world_size == w.size() && Topology::parse(meta.topology, meta.world_size) == w.topology() &&
                  meta.plan.same_sharding(s.plan) && meta.train.param_dtype == s.dtype;
    if (same_layout) s.read_own_shards(ckpt);
    else s.fill_from_whole(ckpt);  // the slices of this rank's new shards from the saved optim shards
    s.step = meta.step;
    s.optim_steps = meta.optim_steps;
    s.loss_scale = s.dtype == DType::f16 ? (meta.train.param_dtype == DType::f16 ? meta.loss_scale : initial_loss_scale(s.cfg)) : 1.0f;
    s.good_steps = meta.good_steps;
  } catch (const Error& e) {
    problem = e.message();
  }
  // Every rank checked its part; all fail together, with the first rank's reason, when any part is bad.
  problem = s.first_problem(problem);
  TZ_CHECK(problem.empty(), FormatError, problem);
  s.mem.zero(s.grads.data(), s.grads.bytes());
  s.mem.fence();
  return !same_layout;
}

}  // namespace tierzero
