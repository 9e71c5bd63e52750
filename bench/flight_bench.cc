// What the flight recorder (tierzero/flight_recorder.h) costs a training
// step: the engine's steps in pairs, one with the recorder off and one on
// (4096 records), the order alternating from pair to pair, in one job
// (measured_change_pct: the median over pairs of on / off - 1, with the
// mean and its 95% interval, 1.96 standard errors; the recorder is
// switched on and off between steps, its ring allocated once); and the
// recorder's own cost per collective and per queued job measured apart,
// from which the bound on a step's overhead is records per step x cost per
// record + jobs per step x cost per job, over the step time. On a machine
// shared by several ranks per core the steps' own spread is several
// percent, far above the recorder's cost: the bound is the figure to read,
// the pairs say the steps did not slow beyond that spread. One JSON object
// on rank 0's stdout.
//   mpirun -np 8 build/bench/tierzero_flight_bench --model gpt-mini --pairs 20 --topology package=2,node=2,world=2
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <mpi.h>

#include "comm/flight_state.h"
#include "tierzero/data.h"
#include "tierzero/flight_recorder.h"
#include "tierzero/gpt_config.h"
#include "tierzero/mpi.h"
#include "tierzero/plan.h"
#include "tierzero/sharded_trainer.h"

namespace {

using namespace tierzero;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Nanoseconds per call of `f`, the best of 5 rounds of `n` calls.
template <class F>
double ns_per_call(int n, F&& f) {
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) f();
    best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n);
  }
  return best;
}

// The recorder's cost per collective (a world of one's all-reduce of one
// float, recorder on minus off) and per queued job (what the schedule adds:
// the tag copy, the queueing time, the executor's job scope and counters).
std::pair<double, double> recorder_costs() {
  auto self = self_world(Topology({1, 1, 1}, {Level::node, Level::world}));
  float x = 0;
  const auto collective = [&] { self->all_reduce(&x, &x, 1, DType::f32, ReduceOp::sum); };
  constexpr int kCalls = 200000;
  start_flight_recorder(*self, {0, ""});
  const double off = ns_per_call(kCalls, collective);
  start_flight_recorder(*self, {4096, ""});
  const double on = ns_per_call(kCalls, collective);
  const int queue = flight_open_queue();
  std::uint64_t job = 0;
  const double per_job = ns_per_call(kCalls, [&] {
    const FlightTag tag = flight_context().tag;
    const std::int64_t queued = flight_now_ns();
    flight_job_started(queue, job);
    const FlightJobScope scope(tag, queued, queue, job);
    flight_job_finished(queue, job++);
  });
  start_flight_recorder(*self, {0, ""});
  return {std::max(0.0, on - off), per_job};
}

std::uint64_t jobs_so_far() {
  const FlightRecorder& r = flight_recorder();
  std::uint64_t n = 0;
  for (int q = 0; q < r.num_queues.load(); ++q) n += r.queues[q].entered.load();
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(&argc, &argv);
  std::string model = "gpt-mini", topology;
  int pairs = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--model")) model = argv[i + 1];
    else if (!std::strcmp(argv[i], "--pairs")) pairs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--topology")) topology = argv[i + 1];
  }
  const Topology topo = resolve_topology(topology);
  auto world = mpi_world(topo);
  TrainConfig cfg;
  cfg.model = load_model(model);
  cfg.data = "builtin";
  cfg.micro_batch = 1;
  cfg.recompute = false;
  cfg.steps = 2 * pairs + 3;
  const Plan plan = fit_to(strategy_plan("hier3"), topo);
  const TokenData data = TokenData::load(cfg.data);
  ShardedTrainer trainer(cfg, plan, *world, data);
  start_flight_recorder(*world, {4096, ""});
  trainer.step();  // warm-up: first-touch page faults (the ring's too), the GEMMs' first calls
  FlightRecorder& recorder = flight_recorder();
  std::vector<double> off, on, ratio;
  for (int s = 0; s < 2 * pairs; ++s) {
    const bool recording = (s + s / 2) % 2 == 1;  // off, on; on, off; off, on; ...
    recorder.on.store(recording);  // every rank alike, between steps
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    trainer.step();
    double t = std::chrono::duration<double>(Clock::now() - t0).count();
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);  // the slowest rank's step
    (recording ? on : off).push_back(t);
    if (s % 2 == 1) ratio.push_back(on.back() / off.back());
  }
  // Two more steps, recording, the second to count a step's records and jobs (the queues' counters stand still
  // while the recorder is off).
  recorder.on.store(true);
  trainer.step();
  const std::uint64_t jobs_before = jobs_so_far(), records_before = recorder.next.load();
  trainer.step();
  const auto records = static_cast<double>(recorder.next.load() - records_before);
  const auto jobs = static_cast<double>(jobs_so_far() - jobs_before);
  const auto [record_ns, job_ns] = recorder_costs();
  if (mpi.rank() != 0) return 0;
  const double step_off = median(off), step_on = median(on);
  const double bound = (records * record_ns + jobs * job_ns) * 1e-9 / step_off;
  double mean = 0, var = 0;
  for (double r : ratio) mean += r / ratio.size();
  for (double r : ratio) var += (r - mean) * (r - mean) / (ratio.size() - 1);
  const double half = 1.96 * std::sqrt(var / ratio.size());
  std::printf(
      "{\"bench\":\"flight\",\"model\":\"%s\",\"ranks\":%d,\"topology\":\"%s\",\"strategy\":\"hier3\",\"pairs\":%zu,"
      "\"step_off_median_s\":%.4f,\"step_on_median_s\":%.4f,\"step_off_min_s\":%.4f,\"step_on_min_s\":%.4f,\"measured_change_pct\":%.2f,"
      "\"mean_change_pct\":%.2f,\"mean_change_ci95_pct\":[%.2f,%.2f],\"pair_change_min_pct\":%.2f,\"pair_change_max_pct\":%.2f,"
      "\"records_per_step\":%.0f,\"jobs_per_step\":%.0f,\"record_ns\":%.1f,\"job_ns\":%.1f,\"overhead_bound_pct\":%.5f}\n",
      model.c_str(), mpi.size(), topo.to_string().c_str(), ratio.size(), step_off, step_on, *std::min_element(off.begin(), off.end()),
      *std::min_element(on.begin(), on.end()), 100 * (median(ratio) - 1), 100 * (mean - 1), 100 * (mean - half - 1), 100 * (mean + half - 1),
      100 * (*std::min_element(ratio.begin(), ratio.end()) - 1),
      100 * (*std::max_element(ratio.begin(), ratio.end()) - 1), records, jobs, record_ns, job_ns, 100 * bound);
  return 0;
}
