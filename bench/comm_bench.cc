#include "comm_bench.h"

#include "comm/hier/hierarchy.h"
#include "comm/hier/hop_state.h"
#include "core/sourced_table.h"
#include "model/gemm.h"
#include "model/ops.h"
#include "tierzero/simulator.h"
#include "tierzero/trainer.h"

#include <mpi.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string_view>
#include <thread>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tierzero::bench {

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Mean seconds per call of `op` on the slowest rank.
// Calls of an operation taking `t` seconds that fill about half a second (3 to 200).
int iterations_for(double t) { return static_cast<int>(std::clamp(0.5 / std::max(t, 1e-9), 3.0, 200.0)); }

double time_op(Communicator& world, int warmup, int iters, const std::function<void()>& op) {
  for (int i = 0; i < warmup; ++i) op();
  world.barrier();
  const double t0 = now();
  for (int i = 0; i < iters; ++i) op();
  double t = (now() - t0) / iters;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

// How many ranks share each core of this machine (at least 1): the ranks that run under this kernel (the same boot
// id: emulated hosts in network namespaces share one machine's cores) over the cores this process may run on.
double ranks_per_core() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(f, boot);
  MPI_Comm machine;
  if (boot.empty()) MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &machine);
  else MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(std::hash<std::string>{}(boot) & 0x3fffffff), 0, &machine);
  int ranks = 1;
  MPI_Comm_size(machine, &ranks);
  MPI_Comm_free(&machine);
  cpu_set_t set;
  const int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1.0, static_cast<double>(ranks) / std::max(cores, 1));
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Seconds per call of `op` when every rank of this host computes at once on cores it shares with no other program:
// the CPU time a call takes this process, times the ranks that share each core; the slowest rank's. Unlike the wall
// time, it does not grow with what else the machine runs.
double shared_core_time(Communicator& world, int warmup, int iters, const std::function<void()>& op) {
  for (int i = 0; i < warmup; ++i) op();
  world.barrier();
  const double t0 = process_cpu_seconds();
  for (int i = 0; i < iters; ++i) op();
  double t = (process_cpu_seconds() - t0) / iters * ranks_per_core();
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}
// CommBenchRow::hop_time_s of `r` over `hier`'s hops: each hop's transfer
// stages of the whole plan, run alone on its communicator between `in` and
// `out` (each at least the collective's whole message).
std::vector<std::pair<Level, double>> hop_times(Communicator& world, const Hierarchy& hier, const HopRequest& r, DType t,
                                                const CommBenchOptions& opt, const std::byte* in, std::byte* out) {
  const HopPlan p(hop_groups(world.topology(), three_level_hops()), r);
  std::vector<std::pair<Level, double>> times;
  for (std::size_t h = 0; h < p.hops().size(); ++h) {
    const Level level = p.hops()[h].levels.back();
    Communicator& hop = hier.hop(level);
    times.emplace_back(level, time_op(world, opt.warmup, opt.iters, [&] {
      for (std::size_t st = 0; st < p.num_stages(); ++st)
        if (const HopStage& g = p.stage(st, 0); g.transfer && g.hop == h) issue_transfer(hop, g, in, out, t).wait();
    }));
  }
  return times;
}

// Each rank's own values of `t` (a float dtype from [-1, 1), an integer one any bits), so that a result that puts
// a value in the wrong place or sums in another order can differ.
void fill_distinct(std::vector<std::byte>& buf, DType t, int rank) {
  std::mt19937 gen(0x7a0u + static_cast<unsigned>(rank));
  if (!is_float(t)) {
    for (auto& b : buf) b = static_cast<std::byte>(gen() & 0xff);
    return;
  }
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> values(buf.size() / dtype_size(t));
  for (auto& v : values) v = u(gen);
  from_f32(t, values.data(), buf.data(), values.size());
}

// Whether `op` leaves the first `n` bytes of `out` as `reference` does, on every rank.
bool same_result(const std::function<void()>& reference, const std::function<void()>& op, std::vector<std::byte>& out,
                 std::size_t n) {
  reference();
  const std::vector<std::byte> want(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
  std::fill(out.begin(), out.end(), std::byte{0});
  op();
  int equal = std::memcmp(want.data(), out.data(), n) == 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &equal, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return equal != 0;
}
}  // namespace

std::vector<CommBenchRow> run_comm_bench(Communicator& world, const CommBenchOptions& opt) {
  Hierarchy hier(world), piped(world);
  piped.set_chunk_bytes(opt.hop_chunk_bytes);
  const int w = world.size();
  const std::size_t esize = dtype_size(opt.dtype);
  std::vector<CommBenchRow> rows;
  std::vector<std::byte> in, out;
  for (std::size_t m : opt.sizes_bytes) {
    const std::size_t total = std::max<std::size_t>(m / esize / w, 1) * w;  // elements, divisible by w
    const std::size_t shard = total / w;
    in.resize(total * esize);
    fill_distinct(in, opt.dtype, world.rank());
    out.assign(total * esize, std::byte{0});
    struct Case {
      const char* collective;
      const char* algorithm;
      std::function<void()> op;
      HopCollective kind = HopCollective::all_gather;  // hier and pipelined: the plan whose hops are timed alone
      std::function<void()> reference{};  // pipelined: the unpipelined collective its result must equal
      std::size_t result_bytes = 0;       // of `out`, what reference and op write
    };
    const DType t = opt.dtype;
    std::vector<Case> cases = {
        {"all_gather", "flat", [&] { world.all_gather(in.data(), out.data(), shard, t); }},
        {"all_gather", "hier", [&] { hier.all_gather(in.data(), out.data(), shard, t); }, HopCollective::all_gather},
        {"reduce_scatter", "flat", [&] { world.reduce_scatter(in.data(), out.data(), shard, t, ReduceOp::sum); }},
        {"reduce_scatter", "hier", [&] { hier.reduce_scatter(in.data(), out.data(), shard, t, ReduceOp::sum); },
         HopCollective::reduce_scatter},
        {"all_reduce", "flat", [&] { world.all_reduce(in.data(), out.data(), total, t, ReduceOp::sum); }},
        {"all_reduce", "hier", [&] { hier.all_reduce(in.data(), out.data(), total, t, ReduceOp::sum); }, HopCollective::all_reduce},
    };
    if (opt.hop_chunk_bytes > 0) {  // the all-reduce is never cut (comm/hier/hop_plan.h)
      cases.insert(cases.begin() + 4, {"reduce_scatter", "pipelined",
                                       [&] { piped.reduce_scatter(in.data(), out.data(), shard, t, ReduceOp::sum); },
                                       HopCollective::reduce_scatter, cases[3].op, shard * esize});
      cases.insert(cases.begin() + 2, {"all_gather", "pipelined", [&] { piped.all_gather(in.data(), out.data(), shard, t); },
                                       HopCollective::all_gather, cases[1].op, total * esize});
    }
    std::vector<std::pair<Level, double>> hops;  // of the last hierarchical collective: its pipelined row shares them
    for (auto& c : cases) {
      CommBenchRow row{c.collective, c.algorithm, total * esize};
      const auto before = world.traffic().snapshot();
      c.op();
      const auto delta = traffic_delta(before, world.traffic().snapshot());
      double per_level[kNumLevels];
      for (int l = 0; l < kNumLevels; ++l) per_level[l] = static_cast<double>(delta[l]);
      MPI_Allreduce(MPI_IN_PLACE, per_level, kNumLevels, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      for (int l = 0; l < kNumLevels; ++l) row.bytes_per_level[l] = per_level[l] / w;
      row.time_s = time_op(world, opt.warmup, opt.iters, c.op);
      row.algbw_gbs = static_cast<double>(row.bytes) / row.time_s / 1e9;
      if (std::string_view(c.algorithm) == "hier")
        hops = hop_times(world, hier, {c.kind, c.kind == HopCollective::all_reduce ? total : shard, esize}, t, opt, in.data(), out.data());
      if (std::string_view(c.algorithm) != "flat") row.hop_time_s = hops;
      if (c.reference) row.equal_to_hier = same_result(c.reference, c.op, out, c.result_bytes);
      rows.push_back(row);
    }
  }
  return rows;
}

std::string to_json_line(const CommBenchRow& row, const Topology& topo) {
  nlohmann::ordered_json j;
  j["collective"] = row.collective;
  j["algorithm"] = row.algorithm;
  j["topology"] = topo.to_string();
  j["bytes"] = row.bytes;
  j["time_s"] = row.time_s;
  j["algbw_gbs"] = row.algbw_gbs;
  nlohmann::ordered_json levels = nlohmann::ordered_json::object();
  for (Level l : topo.levels()) levels[std::string(level_name(l))] = row.bytes_per_level[static_cast<int>(l)];
  j["bytes_per_level"] = levels;
  if (!row.hop_time_s.empty()) {
    nlohmann::ordered_json hops = nlohmann::ordered_json::object();
    for (const auto& [level, t] : row.hop_time_s) hops[std::string(level_name(level))] = t;
    j["hop_time_s"] = hops;
  }
  if (row.equal_to_hier) j["equal_to_hier"] = *row.equal_to_hier;
  return j.dump();
}

// GEMM FLOP/s per rank (in the calling thread's matmul) with every rank multiplying at once (ranks share cores).
double measure_gemm_flops(Communicator& world) {
  constexpr int kN = 384;
  std::vector<float> a(kN * kN, 1.0f), b(kN * kN, 1.0f), c(kN * kN);
  ops::gemm<float>(false, true, kN, kN, kN, 1.0f, a.data(), kN, b.data(), kN, 0.0f, c.data(), kN);
  const double t = shared_core_time(world, 1, 20, [&] {
    ops::gemm<float>(false, true, kN, kN, kN, 1.0f, a.data(), kN, b.data(), kN, 0.0f, c.data(), kN);
  });
  return 2.0 * kN * kN * kN / t;
}

// How the written figures were measured: the command, the job and the date (UTC).
std::string measured_by(const Communicator& world) {
  char date[16] = "";
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  std::strftime(date, sizeof date, "%Y-%m-%d", &utc);
  const int threads = ops::blas_threads();
  return "tierzero bench comm --write-system on " + std::to_string(world.size()) + " ranks (" + world.topology().to_string() + "), " +
         std::to_string(threads) + " GEMM thread" + (threads == 1 ? "" : "s") + " per rank, " + date;
}

// One training step of the calibration model on this rank alone
// (LocalTrainer: forward, backward, clipping, AdamW, parameter casts): the
// work a rank does per step besides communicating.
struct CalibrationPass {
  TrainConfig cfg;
  TokenData data;
  LocalTrainer trainer;
  explicit CalibrationPass(const ComputeCalibration& c)
      : cfg(config(c)), data(TokenData::load(cfg.data)), trainer(cfg, data) {}
  static TrainConfig config(const ComputeCalibration& c) {
    TrainConfig t;
    t.model = load_model(c.model);
    t.micro_batch = c.micro_batch;
    t.seq_len = c.seq_len;
    t.param_dtype = DType::bf16;
    t.recompute = false;  // the step's own work: the simulator adds recomputation's where its input asks for it
    t.validate();
    return t;
  }
  void run() { trainer.step(); }
  double flops() const {
    return cfg.model.flops_per_token(cfg.effective_seq_len()) * cfg.micro_batch * static_cast<double>(cfg.effective_seq_len());
  }
};

// How much of a stream of `op` calls (sized to last about as long as the
// pass) hides under the pass when a second thread runs it, as the engine's
// communication thread does: (t_compute + t_comm - t_both) /
// min(t_compute, t_comm), clamped to [0, 1].
double measure_overlap(Communicator& world, CalibrationPass& pass, double t_compute, const std::function<void()>& op) {
  const double t_one = time_op(world, 1, 3, op);
  const int reps = std::max(1, static_cast<int>(t_compute / t_one));
  const double t_comm = time_op(world, 0, 1, [&] { for (int r = 0; r < reps; ++r) op(); });
  const double t_both = time_op(world, 0, 1, [&] {
    std::thread comm([&] { for (int r = 0; r < reps; ++r) op(); });
    pass.run();
    comm.join();
  });
  return std::clamp((t_compute + t_comm - t_both) / std::min(t_compute, t_comm), 0.0, 1.0);
}

// The device's figures: peak (a concurrent sgemm in the pass's GEMM math),
// memory bandwidth (the cpu preset's measured memcpy rate) and the GEMM
// efficiency that makes the simulator's op-by-op compute of the calibration
// step (tierzero's engine) equal its measured time, every rank at once (a
// bisection: the compute falls as the efficiency rises). overlap: of flat
// all-gathers (forward and backward gathers) and of flat bf16
// reduce-scatters (reductions, whose sums the CPU computes beside the
// model: they hide less) of 256 KiB shards.
void measure_compute(Communicator& world, const ComputeCalibration& c, System& sys) {
  const std::string how = measured_by(world);
  CalibrationPass pass(c);
  // The peak in the GEMM math the pass computes in (its trainer set it on this
  // thread: bf16 where the CPU has bf16 units), so the efficiency compares like with like.
  sys.peak_flops = measure_gemm_flops(world);
  const double sharing = ranks_per_core();
  const std::string ranks = fmt::format("{:.3g}", sharing);
  set_source(sys.device.sources, "peak_tflops",
             "measured: 384x384x384 " + std::string(matmul_type_name(ops::matmul())) +
                 " GEMMs on every rank at once, their CPU time times the " + ranks + " ranks that share each core here; " + how);
  // A core's streaming rate, shared as its compute is.
  sys.memory_bandwidth_Bps /= sharing;
  set_source(sys.device.sources, "memory_bandwidth_gbs",
             source_of(sys.device.sources, "memory_bandwidth_gbs") + ", over the " + ranks + " ranks that share each core (measured: " + how + ")");
  const double t_compute = shared_core_time(world, 1, 5, [&] { pass.run(); });
  SimInput step;
  step.model = pass.cfg.model, step.micro_batch = c.micro_batch, step.seq_len = c.seq_len, step.ranks = 1;
  step.system = sys;
  step.system.links = system_preset("cpu")->links;  // one rank: no communication priced
  step.topology_spec = "node=1";
  step.plan = strategy_plan("ddp");
  double lo = 1e-3, hi = 1;
  for (int i = 0; i < 40; ++i) {
    step.system.device.gemm_efficiency = std::sqrt(lo * hi);
    (simulate(step).compute_s > t_compute ? lo : hi) = step.system.device.gemm_efficiency;
  }
  sys.device.gemm_efficiency = std::sqrt(lo * hi);
  set_source(sys.device.sources, "gemm_efficiency",
             "measured: the simulator's compute of a " + c.model + " step (micro-batch " + std::to_string(c.micro_batch) +
                 ", sequence " + std::to_string(pass.cfg.effective_seq_len()) + ") equals its measured " + fmt::format("{:.4g}", t_compute) +
                 " s, every rank at once, in CPU time times the ranks that share each core; " + how);
  constexpr std::size_t kShard = 1 << 18;
  std::vector<std::byte> in(kShard * world.size(), std::byte{0}), out(kShard * world.size());
  const double gathers = measure_overlap(world, pass, t_compute, [&] { world.all_gather(in.data(), out.data(), kShard, DType::u8); });
  const double reductions = measure_overlap(world, pass, t_compute, [&] {
    world.reduce_scatter(in.data(), out.data(), kShard / 2, DType::bf16, ReduceOp::sum);
  });
  sys.overlap = {gathers, gathers, reductions};
}

System measure_system(Communicator& world, const std::string& name, const ComputeCalibration& calibration) {
  const Topology& topo = world.topology();
  // Per-rank shard sizes of the all-gathers the α–β line is fitted to.
  constexpr std::size_t kTiny = 8, kLarge = 1 << 19;
  std::vector<std::byte> in(kLarge, std::byte{1}), out;
  System sys;
  sys.name = name;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const int per_node = topo.fanout(Level::package) * topo.fanout(Level::node);
  sys = device_preset("cpu");
  sys.name = name;
  // The preset's figures this bench does not measure keep their values; their sources say whose they are.
  for (auto& [key, text] : sys.device.sources) text = "not measured here: the cpu preset's (" + text + ")";
  const double host = static_cast<double>(pages) * static_cast<double>(page);
  sys.memory_bytes = host / per_node;
  set_source(sys.device.sources, "memory_gb",
             fmt::format("measured: this host's physical memory ({:.3f} GB, sysconf) over its {} ranks (the package and node "
                         "fan-outs); ", host / 1e9, per_node) + measured_by(world));
  sys.collectives = CollectiveLibrary::mpi;
  measure_compute(world, calibration, sys);
  std::optional<LinkSpec> inner;  // the last measured level
  for (Level l : topo.levels()) {
    LinkSpec link;
    link.level = l;
    link.fanout = l == Level::world ? 0 : topo.fanout(l);
    const int f = topo.fanout(l);
    if (f > 1) {
      // A direct all-gather over group(l), as the engine's flat gathers run:
      // every member sends its shard to every other at once, so the level's
      // links carry as many flows as in training. Each rank receives
      // shard * (f - 1) * (ranks of group(l) inside level l) over level l's
      // link, taken to be the group's slowest.
      const auto group = world.split(l);
      const double peers_outside = static_cast<double>(f - 1) * (group->size() / f);
      out.resize(kLarge * group->size());
      auto gather_on = [&](Communicator& c, std::size_t bytes) {
        const auto op = [&] { c.all_gather(in.data(), out.data(), bytes, DType::u8); };
        return time_op(world, 3, iterations_for(time_op(world, 0, 1, op)), op);  // about half a second of calls
      };
      auto gather = [&](std::size_t bytes) { return gather_on(*group, bytes); };
      // t = (members - 1) * latency + bytes / bandwidth (the simulator's
      // hop model): latency from 8-byte shards, bandwidth from the time
      // above it at two shard sizes like a training step's per-unit shards
      // (TCP under tbf moves large bursts at a lower rate than small ones,
      // so a slope across sizes would not describe either).
      // Each size's rate is also kept as an achieved-rate point (participants: the group's size).
      const double t0 = gather(kTiny);
      double rate = 0;
      for (std::size_t b : {kLarge / 2, kLarge}) {
        const double achieved = peers_outside * static_cast<double>(b) / std::max(gather(b) - t0, 1e-9);
        link.achieved.push_back({static_cast<int>(group->size()), static_cast<double>(b), achieved});
        rate += achieved / 2;
      }
      link.bandwidth_Bps = rate;
      // The hop group too (the f ranks that differ only at this level, a
      // hierarchical collective's step), when it is smaller than group(l):
      // a second participant count for the table.
      if (group->size() > f) {
        const auto hop = world.hop(l);
        const double h0 = gather_on(*hop, kTiny);
        for (std::size_t b : {kLarge / 2, kLarge})
          link.achieved.push_back(
              {f, static_cast<double>(b), static_cast<double>(f - 1) * static_cast<double>(b) / std::max(gather_on(*hop, b) - h0, 1e-9)});
      }
      link.latency_s = t0 / (group->size() - 1);
      link.source = "measured by tierzero bench comm (all-gather over group(" + std::string(level_name(l)) + "), " +
                    topo.to_string() + ")";
    } else if (inner) {
      link.bandwidth_Bps = inner->bandwidth_Bps;
      link.latency_s = inner->latency_s;
      link.source = "not measured (fan-out 1 in the measuring job); copied from level " + std::string(level_name(inner->level));
    } else {
      const LinkSpec& preset = system_preset("cpu")->link(Level::node);
      link.bandwidth_Bps = preset.bandwidth_Bps;
      link.latency_s = preset.latency_s;
      link.source = "not measured (fan-out 1 in the measuring job); cpu preset's node link";
    }
    sys.links.push_back(link);
    if (f > 1) inner = link;
  }
  return sys;
}

}  // namespace tierzero::bench
