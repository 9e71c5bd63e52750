// Measures flat and hierarchical collectives (bench comm) and fits an α–β
// model per level to write a system file. Collective over the world
// communicator; results are identical on every rank.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tierzero/communicator.h"
#include "tierzero/system.h"

namespace tierzero::bench {

struct CommBenchOptions {
  std::vector<std::size_t> sizes_bytes = {1 << 16, 1 << 20, 1 << 22, 1 << 24};  // M: the full tensor
  int warmup = 2;
  int iters = 5;
  DType dtype = DType::f32;
  std::size_t hop_chunk_bytes = 1 << 18;  // the "pipelined" rows' chunks (Hierarchy::set_chunk_bytes); 0: no such rows
};

// One measurement. `bytes` is M: the all-gather output, the reduce-scatter
// input, the all-reduce buffer. time_s is the slowest rank's mean per call;
// algbw_gbs = bytes / time_s / 1e9; bytes_per_level is received bytes per
// rank per call, averaged over ranks. hop_time_s (hierarchical rows): each
// hop's transfers alone, by level (the hop's outermost), on the hop's own
// communicator with the bytes the whole plan sends on it, every hop group
// at once and the other hops idle; slowest rank's mean per call; innermost
// first, empty for flat rows. A pipelined collective aims at its slowest hop's time.
// equal_to_hier (pipelined rows): whether every rank's result is the
// unpipelined hierarchical one's bit for bit, both run on the same input
// (each rank's own pseudo-random values, not a constant). An all-gather's
// must be; a float reduce-scatter's may differ in rounding where a hop
// group has more than 2 members and MPI sums a chunk in another order than
// the whole message (docs/algorithms.md, "One hop plan, pipelined hops").
struct CommBenchRow {
  std::string collective;  // all_gather | reduce_scatter | all_reduce
  std::string algorithm;   // flat | hier | pipelined (hier with its hops pipelined)
  std::size_t bytes = 0;
  double time_s = 0;
  double algbw_gbs = 0;
  std::array<double, kNumLevels> bytes_per_level{};
  std::vector<std::pair<Level, double>> hop_time_s{};
  std::optional<bool> equal_to_hier{};
};

// Collective over `world` (the hierarchy over its topology is built here).
std::vector<CommBenchRow> run_comm_bench(Communicator& world, const CommBenchOptions& opt);
std::string to_json_line(const CommBenchRow& row, const Topology& topo);

// The workload whose compute the written system's device gemm_efficiency
// is fitted to: a bf16 training step of `model` on every rank at once.
struct ComputeCalibration {
  std::string model = "gpt-mini";
  int micro_batch = 1;
  int seq_len = 128;  // 0: the model's context (at most 2048), as train's
};

// Fits latency and bandwidth per declared level from all-gathers over
// group(level), all running at once (so shared links are contended as in
// training). Levels with fan-out 1 cannot be measured and copy the
// nearest measured inner level (their `source` says so). Peak FLOP/s is
// a concurrent GEMM in the calibration step's math; memory the host's over
// its ranks; gemm_efficiency the one at which the simulator's op-by-op
// compute of the calibration step takes its measured time; both timed as
// CPU time times the ranks that share each core of the machine (every rank
// computing at once, nothing else running), and the cpu preset's memory
// bandwidth shared the same way; overlap how much communication hides under
// it. Each measured figure's source says what was measured, on how many
// ranks and GEMM threads, with which command and when; the cpu preset's
// figures it keeps say they were not measured here. Collectives are direct
// (the MPI communicator).
System measure_system(Communicator& world, const std::string& name, const ComputeCalibration& calibration);

}  // namespace tierzero::bench
