// tierzero train: a training run configured by --config run.toml and flags.

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>
#include <fmt/format.h>

#include "commands.h"
#include "flight_signals.h"
#include "preemption.h"
#include "validators.h"
#include "tierzero/backend.h"
#include "tierzero/checkpoint.h"
#include "tierzero/deepspeed_config.h"
#include "tierzero/sharded_trainer.h"
#ifdef TZ_HAVE_NCCL
#include "tierzero/gpu_backend.h"
#include "tierzero/nccl.h"
#endif
#include "tierzero/error.h"
#include "tierzero/flight_recorder.h"
#include "tierzero/mesh.h"
#include "tierzero/order_check.h"
#include "tierzero/trainer.h"
#include "breakdown_report.h"
#include "train_report.h"

namespace tierzero::cli {

namespace {
struct TrainArgs {
  std::string config, model, data, val_data, metrics, param_dtype, matmul, strategy, plan, topology, deepspeed, save_dir, resume, init;
  std::string offload_optimizer, offload_param, nvme_path;
  StepLogDirs logs;  // --tensorboard, --csv-monitor
  std::int64_t persist_threshold = -1;  // -1: the strategy's or the DeepSpeed config's
  double val_fraction = -1;
  int eval_every = -1, eval_batches = 0;
  std::string device = "cpu";
  int save_every = 0, keep = 0;
  double comm_timeout = 600;
  std::int64_t steps = 0;
  int micro_batch = 0, grad_accum = 0, seq_len = -1, log_every = 0, warmup = -1;
  double lr = 0;
  std::int64_t seed = -1;
  int max_bad_steps = 10;
  int comm_queues = 0;
  int tp = 0;  // --tp: the tensor-parallel degree (tierzero/mesh.h); 0: the plan file's, else 1
  std::string tp_level;  // --tp-level: its level; "": the plan file's, else the innermost declared
  bool sp = false;  // --sp: sequence parallelism (or the plan file's)
  std::int64_t flight_records = 4096;
  std::string flight_dir;
  bool flight_dump_on_stop = false;
  int recompute = 0;  // --recompute 1, --no-recompute -1, neither 0
  bool breakdown = false, check_comm_order = false, allow_seed_change = false, async_save = false;
};

// The run's configuration: a DeepSpeed config's defaults (multi-rank
// runs), the TOML file, then the DeepSpeed config's keys, then the flags,
// which win over all.
TrainConfig resolve(const TrainArgs& a, const DeepSpeedConfig* ds = nullptr, const std::function<void(TrainConfig&)>& deepspeed = {}) {
  TrainConfig c;
  if (ds) ds->apply_defaults(c);
  if (!a.config.empty()) load_train_config(a.config, c);
  if (deepspeed) deepspeed(c);
  if (!a.model.empty()) c.model = load_model(a.model);
  if (!a.data.empty()) c.data = a.data;
  if (a.steps > 0) c.steps = a.steps;
  if (a.micro_batch > 0) c.micro_batch = a.micro_batch;
  if (a.grad_accum > 0) c.grad_accum = a.grad_accum;
  if (a.seq_len >= 0) c.seq_len = a.seq_len;
  if (a.lr > 0) c.schedule.lr = static_cast<float>(a.lr);
  if (a.warmup >= 0) c.schedule.warmup = a.warmup;
  if (a.seed >= 0) c.seed = static_cast<std::uint64_t>(a.seed);
  if (!a.metrics.empty()) c.metrics = a.metrics;
  if (!a.param_dtype.empty()) c.param_dtype = parse_dtype(a.param_dtype);
  if (!a.matmul.empty()) c.matmul = parse_matmul_type(a.matmul);
  if (a.recompute != 0) c.recompute = a.recompute > 0;
  if (a.breakdown) c.breakdown = true;
  if (a.comm_queues > 0) c.comm_queues = a.comm_queues;
  if (a.log_every > 0) c.log_every = a.log_every;
  if (!a.val_data.empty()) c.val_data = a.val_data;
  if (a.val_fraction >= 0) c.val_fraction = a.val_fraction;
  if (a.eval_every >= 0) c.eval_every = a.eval_every;
  if (a.eval_batches > 0) c.eval_batches = a.eval_batches;
  c.validate();
  return c;
}

// A sharded run as the user described it, resolved once: the configuration
// (as resolve(), with a DeepSpeed config's keys between the TOML file and
// the flags), the plan (--strategy, or the DeepSpeed config's, fitted to
// the topology) and what rank 0 should tell the user about them.
struct ResolvedRun {
  TrainConfig cfg;
  Plan plan;                       // for the mesh's data-parallel ranks
  MeshShape mesh;
  std::vector<std::string> notes;  // printed as "tierzero: NOTE"
  StepLogDirs logs;                // the flags', else the DeepSpeed config's tensorboard and csv_monitor
};

// Where the optimizer state and the parameters live and which units stay
// whole, from the flags (which win over a DeepSpeed config's
// offload_optimizer, offload_param and persistence threshold).
void apply_placement_flags(const TrainArgs& a, Plan& plan) {
  if (!a.offload_optimizer.empty()) plan.optim_offload.device = parse_offload(a.offload_optimizer);
  if (!a.offload_param.empty()) plan.param_offload.device = parse_offload(a.offload_param);
  if (!a.nvme_path.empty()) plan.optim_offload.nvme_path = plan.param_offload.nvme_path = a.nvme_path;
  if (a.persist_threshold >= 0) plan.persist_threshold = static_cast<std::size_t>(a.persist_threshold);
}

// The run's plan file: --plan, --strategy (a shipped plan file), the run
// config's [plan] table, or zero3; at most one of the flags, and a
// DeepSpeed config (which gives the plan itself) with none of them.
PlanFile plan_file(const TrainArgs& a) {
  TZ_CHECK((!a.plan.empty()) + (!a.strategy.empty()) + (!a.deepspeed.empty()) <= 1, ConfigError,
           "give one of --plan, --strategy and --deepspeed-config");
  if (!a.plan.empty()) return read_plan_file(a.plan);
  if (!a.strategy.empty()) return strategy_plan_file(a.strategy);
  std::optional<PlanFile> configured = a.config.empty() ? std::nullopt : read_config_plan(a.config);
  TZ_CHECK(!configured || a.deepspeed.empty(), ConfigError,
           a.config + ": its [plan] table and --deepspeed-config both give the plan; give one");
  return configured ? *configured : strategy_plan_file("zero3");
}

ResolvedRun resolve_run(const TrainArgs& a, const Topology& world, int ranks) {
  PlanFile planned = plan_file(a);
  if (a.deepspeed.empty()) {
    const MeshShape mesh{a.tp > 0 ? a.tp : planned.tp, a.tp_level.empty() ? planned.tp_level : parse_level(a.tp_level),
                         a.sp || planned.sp};  // flags win
    const Topology topo = mesh.data_topology(world);  // the degree against its level and the ranks
    apply_placement_flags(a, planned.plan);  // before the checks: a written plan names no NVMe directory (--nvme-path does)
    return {resolve(a), planned.for_topology(topo), mesh, {}, a.logs};
  }
  const DeepSpeedConfig file = DeepSpeedConfig::read(a.deepspeed);
  const MeshShape mesh{a.tp > 0 ? a.tp : file.tensor_parallel_size(),
                       a.tp_level.empty() ? std::nullopt : std::optional(parse_level(a.tp_level)), a.sp};  // --tp wins over autotp_size
  const Topology topo = mesh.data_topology(world);
  DeepSpeedMapping ds;
  ResolvedRun run{resolve(a, &file, [&](TrainConfig& c) { ds = file.apply(topo, c); }), {}, mesh, {}, a.logs};
  if (a.micro_batch > 0) ds.micro_batch = a.micro_batch;  // given, for DeepSpeed's batch rule
  if (a.grad_accum > 0) ds.grad_accum = a.grad_accum;
  run.notes = finish_deepspeed_run(ds, a.deepspeed, run.cfg, ranks / mesh.tp);  // DeepSpeed's batch counts data-parallel ranks
  run.plan = ds.plan;
  if (run.logs.tensorboard.empty()) run.logs.tensorboard = ds.tensorboard_dir;
  if (run.logs.csv.empty()) run.logs.csv = ds.csv_monitor_dir;
  apply_placement_flags(a, run.plan);
  const auto listed = [](const std::vector<std::string>& keys) {
    std::string s;
    for (const auto& k : keys) s += (s.empty() ? "" : ", ") + k;
    return s;
  };
  if (!ds.ignored.empty()) run.notes.push_back("warning: DeepSpeed keys not implemented and ignored: " + listed(ds.ignored));
  if (!ds.auto_keys.empty())
    run.notes.push_back("DeepSpeed keys set to \"auto\" take tierzero's values (flags, --config, defaults): " + listed(ds.auto_keys));
  return run;
}

// What a run trains on and, when it validates, what it validates on: its
// own file, or the last val_fraction of the training data (then held out).
struct RunData {
  TokenData train;
  std::optional<TokenData> val;
};

RunData load_run_data(const TrainConfig& cfg) {
  TokenData all = TokenData::load(cfg.data);
  std::optional<TokenData> val;
  if (!cfg.val_data.empty()) {
    val = TokenData::load(cfg.val_data);
  } else if (cfg.val_fraction > 0) {
    const std::size_t cut = all.size() - static_cast<std::size_t>(static_cast<double>(all.size()) * cfg.val_fraction);
    val = all.slice(cut, all.size());
    all = all.slice(0, cut);
  }
  if (val) {
    const auto need = static_cast<std::size_t>(cfg.effective_seq_len()) + 1;
    TZ_CHECK(val->size() >= need, ConfigError,
             "validation data '" + val->origin() + "' has " + std::to_string(val->size()) + " tokens: fewer than one sequence of " +
                 std::to_string(need));
    TZ_CHECK(val->vocab() <= static_cast<std::uint32_t>(cfg.model.vocab), ConfigError,
             "validation data '" + val->origin() + "' has vocabulary " + std::to_string(val->vocab()) + " but the model's is " +
                 std::to_string(cfg.model.vocab));
  }
  return {std::move(all), std::move(val)};
}

// The validation loss after step `done` (the steps completed), when one is due
// (every eval_every steps and after the last). Collective on a multi-rank trainer.
std::optional<double> validate_after(Trainer& trainer, const RunData& data, const TrainConfig& cfg, std::int64_t done) {
  if (!data.val || !((cfg.eval_every > 0 && done % cfg.eval_every == 0) || done == cfg.steps)) return std::nullopt;
  return trainer.evaluate(*data.val, cfg.eval_batches);
}

nlohmann::ordered_json level_object(const std::array<std::uint64_t, kNumLevels>& bytes, const Topology& topo) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (Level l : topo.levels()) j[std::string(level_name(l))] = bytes[static_cast<int>(l)];
  return j;
}

// The run as it starts, in the metrics' first row ("run"): meta.json's
// fields (docs/formats.md) for the step it starts at (no files), and recompute.
nlohmann::ordered_json run_object(const TrainConfig& cfg, const Plan& plan, const Topology& topo, int ranks, std::int64_t first_step,
                                  const std::string& data_origin) {
  CheckpointMeta meta;
  meta.step = first_step;
  meta.model = cfg.model;
  meta.train = cfg;
  meta.plan = plan;
  meta.topology = topo.to_string();
  meta.world_size = ranks;
  meta.data_origin = data_origin;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(meta.to_json());
  j["recompute"] = cfg.recompute;
  return j;
}

// The GEMM math the trainer resolved; once, a warning when bf16 was asked
// for and the device cannot, or when the CPU's GEMMs run below its rate.
std::string matmul_used(const TrainConfig& cfg, const Trainer& trainer, bool cpu) {
  if (cfg.matmul == MatmulType::bf16 && trainer.matmul() != MatmulType::bf16)
    std::fprintf(stderr, "tierzero: warning: matmul bf16: the device has no bf16 matrix units (AMX, AVX512-BF16, tensor "
                         "cores); computing in fp32\n");
  if (const std::string w = cpu ? cpu_gemm_warning(trainer.matmul()) : ""; !w.empty())
    std::fprintf(stderr, "tierzero: warning: %s\n", w.c_str());
  return std::string(matmul_type_name(trainer.matmul()));
}

// What the trainer's saves want the user told (rank 0 has them).
void print_warnings(ShardedTrainer& trainer) {
  for (const std::string& w : trainer.take_warnings()) std::fprintf(stderr, "tierzero: warning: %s\n", w.c_str());
}

// Fault injection for tests: VARIABLE=RANK:STEP names the step (its number,
// from 1) before which that rank fails: TIERZERO_FAULT_THROW throws std::bad_alloc,
// TIERZERO_FAULT_SIGNAL sends it SIGUSR1 (a preemption notice). The engine
// reads the faults inside a step (TIERZERO_FAULT_STALL, _MISMATCH,
// _KILL_IN_SAVE: docs/formats.md).
int fault_step(const char* variable, int rank) {
  const char* v = std::getenv(variable);
  int r = -1, step = -1;
  if (v && std::sscanf(v, "%d:%d", &r, &step) == 2 && r == rank) return step;
  return -1;
}

// For the preemption tests: TIERZERO_FAULT_HOLD=STEP[,STEP...] makes every
// rank of a run wait before a listed step (its number, from 1) until it has a notice, or 120 s:
// a run that cannot end before the notice reaches it, however slowly a
// loaded machine (or Slurm's time-limit timer) passes it on. The job's k-th
// start (k = Slurm's SLURM_RESTART_COUNT, 0 outside Slurm or before a
// requeue) waits at the k-th step listed, if it has not passed it, or not
// at all: a start that a notice stopped before its hold does not wait again
// at that hold when the requeued job resumes.
std::int64_t hold_step(std::int64_t first_step) {
  const char* v = std::getenv("TIERZERO_FAULT_HOLD");
  if (!v) return -1;
  const char* restarts = std::getenv("SLURM_RESTART_COUNT");
  long start = restarts ? std::strtol(restarts, nullptr, 10) : 0;
  for (const char* p = v; *p; --start) {
    char* end = nullptr;
    const std::int64_t step = std::strtoll(p, &end, 10);
    if (end == p) break;
    if (start == 0) return step > first_step + 1 ? step : -1;
    p = *end == ',' ? end + 1 : end;
  }
  return -1;
}
void hold_for_notice() {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (preemption_signal() == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// The step a run resumes at (checked before any training): the checkpoint
// must leave steps to train, and the data order (the seed) must be the
// checkpoint's unless the user says otherwise.
std::int64_t check_resume(const std::string& path, const TrainConfig& cfg, bool allow_seed_change, bool root) {
  const CheckpointReader ckpt(path);
  const CheckpointMeta& meta = ckpt.meta();
  TZ_CHECK(meta.step < cfg.steps, ConfigError,
           "checkpoint '" + ckpt.dir() + "' is at step " + std::to_string(meta.step) + " and this run ends at --steps " +
               std::to_string(cfg.steps) + ": nothing to train (give more steps than the checkpoint has)");
  if (meta.train.seed != cfg.seed) {
    const std::string what = "checkpoint '" + ckpt.dir() + "' was trained with seed " + std::to_string(meta.train.seed) +
                             " and this run has seed " + std::to_string(cfg.seed) + ", which changes the data order";
    TZ_CHECK(allow_seed_change, ConfigError, what + " (give --seed " + std::to_string(meta.train.seed) + ", or --allow-seed-change)");
    if (root) std::fprintf(stderr, "tierzero: warning: %s (--allow-seed-change)\n", what.c_str());
  }
  return meta.step;
}

// Counts consecutive steps whose loss or gradients were not finite (in
// `bad`); true, after saying so when `say`, once there were `max` in a row.
bool diverged(const StepStats& st, int& bad, int max, bool say) {
  bad = st.skipped || !std::isfinite(st.loss) ? bad + 1 : 0;
  if (bad < max) return false;
  if (say)
    std::fprintf(stderr, "\ntierzero: error: the loss or the gradients were not finite for %d steps in a row (to step %lld); "
                         "stopping (--max-bad-steps). Lower --lr, check the data, or resume from an earlier checkpoint\n",
                 bad, static_cast<long long>(st.step));
  return true;
}

// Fails before training when checkpoints could not be written there.
void check_writable(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string probe = dir + "/.tierzero-write-test";
  std::FILE* f = std::fopen(probe.c_str(), "w");
  TZ_CHECK(f && std::fputs("ok", f) >= 0 && std::fclose(f) == 0, ConfigError,
           "cannot write checkpoints to '" + dir + "' (" + (ec ? ec.message() : std::string(std::strerror(errno))) + ")");
  std::remove(probe.c_str());
}

// The engine's backend for --device and a world communicator that reaches its memory.
std::pair<const Backend*, std::unique_ptr<Communicator>> device_world(const std::string& device, const Topology& topo) {
  if (device == "cpu") return {&cpu_backend(), mpi_world(topo)};
#ifdef TZ_HAVE_NCCL
  auto world = nccl_world(topo);
  return {&gpu::cuda_backend(), std::move(world)};
#else
  TZ_THROW(ConfigError, "--device " + device + ": this tierzero was built without CUDA and NCCL (configure with "
                        "-DTZ_WITH_CUDA=ON -DTZ_WITH_NCCL=ON, as scripts/gpu_check.sh does)");
#endif
}

int run_sharded(const TrainArgs& a, Context& ctx) {
  MpiSession& mpi = ctx.start_mpi();
  set_comm_timeout(a.comm_timeout);
  const Topology topo = resolve_topology(a.topology);
  auto [backend, device_comm] = device_world(a.device, topo);
  // --check-comm-order: the engine talks through a checking wrapper (tierzero/order_check.h).
  std::unique_ptr<CheckedCommunicator> checked;
  if (a.check_comm_order) checked = std::make_unique<CheckedCommunicator>(*device_comm);
  Communicator* world = checked ? checked.get() : device_comm.get();
  const auto [cfg, plan, mesh_shape, notes, log_dirs] = resolve_run(a, topo, mpi.size());
  check_tp(cfg.model, mesh_shape.tp);
  mesh_shape.check_sp(cfg.effective_seq_len());
  const bool root = mpi.rank() == 0;
  if (root)
    for (const std::string& note : notes) std::fprintf(stderr, "tierzero: %s\n", note.c_str());
  const RunData data = load_run_data(cfg);
  TZ_CHECK(a.resume != "latest" || !a.save_dir.empty(), ConfigError,
           "--resume latest needs --save-dir (the directory whose 'latest' file names the checkpoint)");
  const std::string resume_from = a.resume == "latest" ? a.save_dir : a.resume;
  const std::int64_t first_step = resume_from.empty() ? 0 : check_resume(resume_from, cfg, a.allow_seed_change, root);
  if (!a.save_dir.empty()) {
    check_writable(a.save_dir);
    if (root)
      for (const std::string& name : remove_save_leftovers(a.save_dir))
        std::fprintf(stderr, "tierzero: removed '%s' left in '%s' by an interrupted save\n", name.c_str(), a.save_dir.c_str());
  }
  std::vector<std::unique_ptr<StepLog>> logs;  // opened before any step: a folder they cannot go to fails the run here
  if (root) logs = open_step_logs(log_dirs, first_step);
  // --init: the files' headers are checked here (every rank alike); each rank reads only its shards' slices.
  const std::unique_ptr<StateReader> init = a.init.empty() ? nullptr : open_weights(a.init, cfg.model);
  // The flight recorder (tierzero/flight_recorder.h), before the engine's first collective: dumps into --flight-dir,
  // else the save folder.
  start_flight_recorder(*device_comm, {static_cast<std::size_t>(a.flight_records), a.flight_dir.empty() ? a.save_dir : a.flight_dir});
  arm_flight_signals();
  const Mesh mesh(*world, mesh_shape);
  ShardedTrainer trainer(cfg, plan, mesh, data.train, init.get(), *backend);
  // A failure from here on is reported (and the job ended when the other
  // ranks are not failing alike) before the trainer's destructor waits
  // for collectives that the other ranks may never join.
  try {
    if (!resume_from.empty()) {
      const bool resharded = trainer.load_checkpoint(resume_from);
      if (root)
        std::fprintf(stderr, "tierzero: resumed after step %lld%s\n", static_cast<long long>(trainer.steps_done()),
                     resharded ? " (re-partitioned for this run's ranks, topology, plan or dtype)" : "");
    }
    if (root)
      std::fprintf(stderr, "tierzero: training %s (%zu parameters) on %d %s ranks (%s%s) with %s, %s GEMMs\n", cfg.model.name.c_str(),
                   cfg.model.num_params(), mpi.size(), a.device.c_str(), topo.to_string().c_str(),
                   mesh.tp() > 1 ? (", tp " + std::to_string(mesh.tp()) + (mesh.shape().sp ? " with sp" : "") + " x dp " +
                                     std::to_string(mesh.data_size()))
                                        .c_str()
                                  : "",
                   plan.describe().c_str(),
                   matmul_used(cfg, trainer, a.device == "cpu").c_str());
    std::unique_ptr<TrainReport> report;
    if (root) {
      report = std::make_unique<TrainReport>(cfg.steps, cfg.model.flops_per_token(cfg.effective_seq_len()), mpi.size(), cfg.metrics,
                                             cfg.log_every, first_step);
      report->set_extra("strategy", plan.name);
      report->set_extra("matmul", std::string(matmul_type_name(trainer.matmul())));
      report->set_run(run_object(cfg, plan, topo, mpi.size(), first_step, data.train.origin()));
      for (auto& log : logs) report->add_log(std::move(log));
    }
    const int throw_step = fault_step("TIERZERO_FAULT_THROW", mpi.rank());
    const int signal_step = fault_step("TIERZERO_FAULT_SIGNAL", mpi.rank());
    const std::int64_t held_step = hold_step(first_step);
    arm_preemption(root);
    if (const std::string note = mpirun_sigterm_note(); root && !a.save_dir.empty() && !note.empty())
      std::fprintf(stderr, "tierzero: note: %s\n", note.c_str());
    int bad_steps = 0;
    double save_s = 0;  // the training thread's time in save calls after the last step (reported with the next)
    while (trainer.steps_done() < cfg.steps) {
      if (trainer.steps_done() + 1 == throw_step) throw std::bad_alloc();  // fault injection: a rank-local failure
      if (trainer.steps_done() + 1 == signal_step) std::raise(SIGUSR1);  // fault injection: a preemption notice
      if (trainer.steps_done() + 1 == held_step) hold_for_notice();  // fault injection: wait for a notice
      const bool writing = trainer.save_in_flight();  // an asynchronous save's writer runs during this step
      const StepStats st = trainer.step();
      const std::optional<double> val_loss = validate_after(trainer, data, cfg, st.step);
      // The step's metrics row comes before its checkpoint, so a checkpoint of step N exists only once row N
      // is written: a run killed between the two loses no row when it resumes.
      if (root) {
        report->set_extra("bytes_per_level", level_object(trainer.last_step_bytes(), topo));
        // After the step: the hierarchies' scratch grows to its size during the first one.
        nlohmann::ordered_json mem = nlohmann::ordered_json::object();
        for (const auto& [k, v] : trainer.memory_bytes()) mem[k] = v;
        report->set_extra("memory_bytes", std::move(mem));
        if (!a.save_dir.empty())  // the training thread's time in save calls since the last row; whether a background write overlapped the step
          report->set_extra("checkpoint", {{"save_s", save_s}, {"writing", writing}});
        if (cfg.param_dtype == DType::f16) report->set_extra("loss_scale", trainer.loss_scale());
      }
      if (cfg.breakdown) {  // collective: every rank's breakdown of this step
        const std::vector<StepBreakdown> ranks = trainer.gather_breakdowns();
        if (root) {
          print_breakdown(st.step, ranks, save_s);
          report->set_extra("breakdown", breakdown_json(ranks, save_s));
        }
      }
      if (root) report->record(st, val_loss);
      // This step's checkpoint (every --save-every steps, and after the last step whenever there is a save folder); with
      // --async-save written in the background, the run's last one finished before it ends.
      const bool due = !a.save_dir.empty() && ((a.save_every > 0 && trainer.steps_done() % a.save_every == 0) || trainer.steps_done() == cfg.steps);
      const auto save_start = std::chrono::steady_clock::now();
      if (due && a.async_save) trainer.begin_save(a.save_dir, a.keep);
      else if (due) trainer.save_checkpoint(a.save_dir, a.keep);
      if (a.async_save && trainer.steps_done() == cfg.steps) trainer.complete_save();
      save_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - save_start).count();
      print_warnings(trainer);  // of this save, or of an asynchronous one the last step boundary completed
      if (checked) checked->verify("step " + std::to_string(st.step));  // the step, its validation and its checkpoint
      if (diverged(st, bad_steps, a.max_bad_steps, root)) return 4;  // every rank sees the same (all-reduced) loss and norm
      // A notice during the last step changes nothing: the run is complete, its last checkpoint written (exit 0).
      if (trainer.step_boundary(preemption_signal() != 0 && trainer.steps_done() < cfg.steps)) {  // also completes an asynchronous save whose writers are done
        if (a.flight_dump_on_stop) flight_dump("preempted", FlightDumpKind::stop);
        std::string where = "nothing saved (no --save-dir)";
        if (!a.save_dir.empty()) {
          trainer.complete_save();  // a save in flight: this step's (when one was due) or an earlier one's
          where = "saved " + (due ? (std::filesystem::path(a.save_dir) / step_dir_name(trainer.steps_done())).string()
                                  : trainer.save_checkpoint(a.save_dir, a.keep));
        }
        print_warnings(trainer);
        if (checked) checked->verify("the preemption checkpoint");
        if (root)
          std::fprintf(stderr, "tierzero: preempted (a rank received SIGTERM, SIGUSR1 or SIGINT, or found mpirun gone) after step %lld: %s; rerun with --resume latest "
                               "(exit code %d)\n", static_cast<long long>(st.step), where.c_str(), kExitPreempted);
        return kExitPreempted;
      }
    }

    if (root) report->finish();
    return 0;
  } catch (...) {
    flight_dump("error", FlightDumpKind::failure);
    ctx.fail(std::current_exception());
    throw;
  }
}

int run_train(const TrainArgs& a, Context& ctx) {
  const bool planned = !a.strategy.empty() || !a.plan.empty() || !a.deepspeed.empty() || (!a.config.empty() && read_config_plan(a.config));
  if (a.device != "cpu" || planned || a.tp > 1 || !a.tp_level.empty() || a.sp || !a.topology.empty() || !a.save_dir.empty() || !a.resume.empty() || !a.init.empty() ||
      !a.offload_optimizer.empty() || !a.offload_param.empty() || std::getenv("OMPI_COMM_WORLD_SIZE"))
    return run_sharded(a, ctx);
  const TrainConfig cfg = resolve(a);
  if (cfg.breakdown) return run_sharded(a, ctx);  // the breakdown is the sharding engine's (a world of one here)
  const RunData data = load_run_data(cfg);
  std::vector<std::unique_ptr<StepLog>> logs = open_step_logs(a.logs, 0);
  LocalTrainer trainer(cfg, data.train);
  std::fprintf(stderr, "tierzero: training %s (%zu parameters) on %s: %lld steps of %d x %d x %d tokens, %s GEMMs\n",
               cfg.model.name.c_str(), trainer.num_params(), data.train.origin().c_str(),
               static_cast<long long>(cfg.steps), cfg.micro_batch, cfg.grad_accum, cfg.effective_seq_len(),
               matmul_used(cfg, trainer, true).c_str());
  TrainReport report(cfg.steps, cfg.model.flops_per_token(cfg.effective_seq_len()), 1, cfg.metrics, cfg.log_every);
  report.set_extra("strategy", "single");
  report.set_extra("matmul", std::string(matmul_type_name(trainer.matmul())));
  for (auto& log : logs) report.add_log(std::move(log));
  arm_preemption(true);
  int bad_steps = 0;
  while (trainer.steps_done() < cfg.steps) {
    const StepStats st = trainer.step();
    report.record(st, validate_after(trainer, data, cfg, st.step));
    if (diverged(st, bad_steps, a.max_bad_steps, true)) return 4;
    if (preemption_signal() != 0 && trainer.steps_done() < cfg.steps) {
      std::fprintf(stderr, "tierzero: stopped by signal %d after step %lld: nothing saved (no --save-dir) (exit code %d)\n",
                   preemption_signal(), static_cast<long long>(st.step), kExitPreempted);
      return kExitPreempted;
    }
  }
  report.finish();
  return 0;
}
}  // namespace

void add_train_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<TrainArgs>();
  const TrainConfig d;  // the defaults, every command's (tierzero/train_config.h)
  CLI::App* c = app.add_subcommand("train", "Train a GPT model");
  c->add_option("--config", a->config,
                fmt::format("TOML run configuration: the keys below and those without a flag, with their defaults: beta1 {:g}, "
                            "beta2 {:g}, eps {:g}, weight_decay {:g}, grad_clip {:g} (0: off), min_lr_ratio {:g} (the cosine's "
                            "floor, x lr), and a [plan] table (a plan file's); flags override it (README, Configuration)",
                            d.adamw.beta1, d.adamw.beta2, d.adamw.eps, d.adamw.weight_decay, d.grad_clip, d.schedule.min_lr_ratio));
  c->add_option("--model", a->model, std::string(kModelHelp) + " (default " + d.model.name + ")");
  c->add_option("--data", a->data,
                "'builtin' (the default: the King James Bible, bytes), a token file made by 'tierzero data prepare', or an "
                "llm.c/nanoGPT .bin shard");
  c->add_option("--val-data", a->val_data, "Held-out token file for the validation loss");
  c->add_option("--val-fraction", a->val_fraction, "Hold out this last fraction of --data for the validation loss (at most 0.5)")
      ->check(finite_number(false));
  c->add_option("--eval-every", a->eval_every, "Steps between validation losses (default 0: after the last step only)")->check(at_least(0));
  c->add_option("--eval-batches", a->eval_batches, "Held-out batches of micro-batch sequences per validation (default 8)")
      ->check(at_least(1));
  c->add_option("--steps", a->steps,
                fmt::format("Optimisation steps (default {}; with --deepspeed-config, its scheduler's total_num_steps when it "
                            "gives one)", d.steps))
      ->check(at_least(1));
  c->add_option("--micro-batch", a->micro_batch, fmt::format("Sequences per micro-batch per rank (default {})", d.micro_batch))
      ->check(at_least(1));
  c->add_option("--grad-accum", a->grad_accum, fmt::format("Micro-batches per step (default {})", d.grad_accum))->check(at_least(1));
  c->add_option("--seq-len", a->seq_len,
                fmt::format("Sequence length (default 0: the model's context, at most {})", TrainConfig::kDefaultMaxSeqLen))
      ->check(at_least(0));
  c->add_option("--lr", a->lr,
                fmt::format("Peak learning rate (default {:g}): linear warmup to it, then a cosine down to lr x min_lr_ratio "
                            "({:g}) at the last step", d.schedule.lr, d.schedule.min_lr_ratio))
      ->check(finite_number(true));
  c->add_option("--warmup", a->warmup, fmt::format("Warmup steps (default {})", d.schedule.warmup))->check(at_least(0));
  c->add_option("--seed", a->seed, fmt::format("Seed of initialisation and data order (default {})", d.seed))->check(at_least(0));
  c->add_option("--param-dtype", a->param_dtype,
                fmt::format("Working parameter storage: fp32, bf16, fp16 (default {})", dtype_name(d.param_dtype)));
  c->add_flag("--recompute,!--no-recompute", a->recompute,
              fmt::format("Recompute activations in backward (default {}; --no-recompute keeps them: faster, more memory)",
                          d.recompute ? "on" : "off"));
  c->add_flag("--breakdown", a->breakdown,
              "Print where each step's time goes on every rank (compute; waits for gathers, reductions and control values, split "
              "by level, quantisation and local work; checkpoint) and write it to the metrics");
  c->add_option("--matmul", a->matmul,
                "GEMM math: fp32, bf16 (bf16 inputs, fp32 accumulation, on AMX/AVX512-BF16 or tensor cores) or auto (default: "
                "bf16 with bf16 parameters where the device has bf16 units)")
      ->check(CLI::IsMember({"auto", "fp32", "bf16"}));
  c->add_option("--metrics", a->metrics, "Write one JSON object per step to this file");
  c->add_option("--tensorboard", a->logs.tensorboard,
                "Write rank 0's scalars (loss, lr, throughput, step time and its breakdown, bytes per level, memory per state) as "
                "TensorBoard event files in this folder, a new file per run start (DeepSpeed's tensorboard section)");
  c->add_option("--csv-monitor", a->logs.csv,
                "Write the same scalars as DeepSpeed's csv_monitor does: one CSV file per scalar in this folder");
  c->add_option("--log-every", a->log_every, fmt::format("Steps between log lines when not on a terminal (default {})", d.log_every))
      ->check(at_least(1));
  c->add_option("--device", a->device,
                "Where the engine runs: cpu (MPI) or cuda (one GPU per rank, NCCL; compiled and tested on the CPU only: no GPU run has "
                "passed yet, docs/gpu.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  c->add_option("--comm-queues", a->comm_queues,
                "2 (default): parameter gathers and gradient reductions in two queues, each in one order on its own thread, so "
                "gathers never wait behind reductions (MPI; one queue with NCCL); 1: one queue for every collective")
      ->check(CLI::Range(1, 2));
  std::string strategies;
  for (const std::string& n : strategy_names()) strategies += (strategies.empty() ? "" : ", ") + n;
  c->add_option("--strategy", a->strategy,
                "A named plan: " + strategies + " (the plan files of data/plans; multi-rank; default zero3, or the run config's [plan])");
  c->add_option("--plan", a->plan,
                "A plan file (TOML [plan] table: each state's level, bits, decompositions, buckets, prefetch, offload; "
                "docs/formats.md), e.g. written by 'tierzero plan --write-plan'; multi-rank");
  c->add_option("--deepspeed-config", a->deepspeed, "DeepSpeed JSON config (ZeRO stage and ZeRO++ keys, offload, batch, optimizer, scheduler, precision, ...): its keys mean "
                "what DeepSpeed means, a key it leaves out takes DeepSpeed's default, and without --steps the run is the scheduler's "
                "total_num_steps long (docs/deepspeed.md)");
  c->add_option("--offload-optimizer", a->offload_optimizer,
                "Where the fp32 master weights and AdamW's moments live: none (device memory), cpu (host memory, the update "
                "on the host) or nvme (files in --nvme-path, streamed unit by unit); DeepSpeed's offload_optimizer.device")
      ->check(CLI::IsMember({"none", "cpu", "nvme"}));
  c->add_option("--offload-param", a->offload_param,
                "Where the 16-bit parameter shards live (partitioned params only: zero3, zeropp, mics, hier3): none, cpu "
                "(host memory) or nvme (files in --nvme-path, read ahead unit by unit before each gather); DeepSpeed's "
                "offload_param.device")
      ->check(CLI::IsMember({"none", "cpu", "nvme"}));
  c->add_option("--persist-threshold", a->persist_threshold,
                "Units (a block, the embedding, the head) of at most N parameters stay whole on every rank: not gathered in "
                "forward and backward, all-gathered once per step after the update (DeepSpeed's "
                "stage3_param_persistence_threshold, per unit; default 0, a DeepSpeed config's 1e5)")
      ->check(at_least(0));
  c->add_option("--nvme-path", a->nvme_path, "Directory of the swap files (--offload-optimizer nvme, --offload-param nvme; on a fast local disk)");
  c->add_option("--save-dir", a->save_dir,
                "Write checkpoints under this directory: after the last step, when the run is preempted (SIGTERM, SIGUSR1, "
                "SIGINT) and every --save-every steps");
  c->add_option("--save-every", a->save_every, "Steps between checkpoints (default: none but the last and a preemption's)")
      ->check(at_least(1));
  c->add_option("--keep", a->keep, "Keep only the newest K checkpoints (default: all)")->check(at_least(0));
  c->add_flag("--async-save", a->async_save,
              "Write checkpoints from a background thread while training goes on (a host snapshot first; 'latest' moves once "
              "every rank's shards are written and checksummed)");
  c->add_option("--resume", a->resume, "Continue from a checkpoint directory, or 'latest' in --save-dir");
  c->add_option("--init", a->init,
                "Start from these weights: a Hugging Face directory (config.json beside model.safetensors, or sharded "
                "model-*.safetensors with model.safetensors.index.json; give the same directory as --model), or a safetensors "
                "file, Hugging Face's names or tierzero's (ckpt export); F32, BF16 or F16");
  c->add_option("--comm-timeout", a->comm_timeout, "Abort when a collective does not complete within S seconds (default 600; 0: never)")
      ->check(finite_number(false));
  c->add_option("--max-bad-steps", a->max_bad_steps,
                 "Stop (exit 4) after this many consecutive steps with a non-finite loss or gradients (default 10)")
      ->check(at_least(1));
  c->add_flag("--allow-seed-change", a->allow_seed_change, "Resume with a --seed other than the checkpoint's (changes the data order)");
  c->add_flag("--check-comm-order", a->check_comm_order,
              "After every step, check that all ranks issued the same collectives in the same order from one thread "
              "(a failure names the first difference; slows each step by two small all-gathers)");
  c->add_option("--topology", a->topology, "Layout, innermost first, e.g. package=2,node=2,world=2 (default: detect nodes)");
  c->add_option("--tp", a->tp,
                "Tensor-parallel degree (default: the plan's tp, else 1): groups of N ranks on --tp-level each hold one copy of the model, "
                "split Megatron-style by heads and MLP columns; the plan shards over the rest (docs/architecture.md, the mesh). "
                "N must divide the level, the heads and the MLP size (key/value heads it does not divide are held by each member whose "
                "query heads read them); the CUDA path is compiled but has not run on a GPU")
      ->check(at_least(1));
  c->add_option("--tp-level", a->tp_level,
                "The level the tensor-parallel groups lie in (package, node, world; default: the plan's tp_level, else the innermost declared)");
  c->add_flag("--sp", a->sp,
              "Sequence parallelism (default: the plan's sp, else off; needs tp > 1 dividing the sequence length): norms and residuals "
              "on 1/N of the sequence, an all-gather before and a reduce-scatter after each parallel region instead of the all-reduces");
  c->add_option("--flight-records", a->flight_records,
                "Collectives each rank's flight recorder keeps, with what the rank was doing (default 4096; 0: off); written to "
                "DIR/flight/rank-R.json when a collective times out, on a fatal signal, on SIGTERM and on SIGUSR2 (tierzero diagnose DIR)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 24));
  c->add_option("--flight-dir", a->flight_dir, "Where the flight dumps go (DIR/flight; default: --save-dir, else none)");
  c->add_flag("--flight-dump-on-stop", a->flight_dump_on_stop,
              "Also write every rank's flight record when the run is preempted (at the step boundary where it stops)");
  c->callback([a, &ctx] { ctx.exit_code = run_train(*a, ctx); });
}

}  // namespace tierzero::cli
