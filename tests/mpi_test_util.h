// Helpers for multi-rank tests: every layout of the job's rank count,
// rank-derived test values and the closed-form traffic formulas of
// docs/algorithms.md, written out independently of the library.
#pragma once
#include <gtest/gtest.h>
#include <mpi.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tierzero/communicator.h"
#include "tierzero/dtype.h"
#include "tierzero/mpi.h"
#include "tierzero/sharded_trainer.h"
#include "tierzero/train_config.h"

namespace tierzero::test {

// A gpt-tiny run for the engine tests: micro_batch x grad_accum sequences
// of seq_len tokens per rank and step, parameters stored in `dtype`.
// The tiny model of each architecture the engine trains: GPT-2's and the Llama family's.
inline const char* const kTinyModels[] = {"gpt-tiny", "llama-tiny"};

// A preset, or kGqa63: llama-tiny with llama-mini's 6 query heads over 3 key/value heads (C 48), which a
// tensor-parallel group of 2 neither splits nor shares whole (each member holds two heads, head 1 on both).
inline constexpr const char* kGqa63 = "gqa-6-3";
inline GptConfig test_model(const std::string& name) {
  if (name != kGqa63) return gpt_preset(name);
  GptConfig c = gpt_preset("llama-tiny");
  c.name = kGqa63, c.channels = 48, c.heads = 6, c.kv_heads = 3;
  return c;
}

inline TrainConfig tiny_run(int micro_batch, int grad_accum, int seq_len, std::int64_t steps, DType dtype = DType::bf16,
                            const char* model = "gpt-tiny") {
  TrainConfig c;
  c.model = test_model(model);
  c.micro_batch = micro_batch, c.grad_accum = grad_accum, c.seq_len = seq_len, c.steps = steps;
  c.param_dtype = dtype;
  return c;
}

// A fresh directory under /tmp made by rank 0, named on every rank.
inline std::string shared_temp_dir() {
  char name[64] = "/tmp/tierzero-test-XXXXXX";
  int rank = 0;
  if (mpi_initialized()) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0 && !mkdtemp(name)) ADD_FAILURE() << "mkdtemp failed";
  if (mpi_initialized()) MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
  return name;
}

// The job's rank count (1 in a world of one, started without mpirun).
inline int world_size() {
  int n = 1;
  if (mpi_initialized()) MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// One layout of the job's rank count: three levels on 12 and 8 ranks, a
// node of 3 on 3, one level otherwise.
inline Topology standard_layout() {
  const int w = world_size();
  if (w == 12) return Topology::parse("package=2,node=2,world=3", 12);
  if (w == 8) return Topology::parse("package=2,node=2,world=2", 8);
  if (w == 3) return Topology::parse("node=3,world=1", 3);
  return Topology::parse("world=" + std::to_string(w), w);
}

// A trainer's memory_bytes() by name.
inline std::map<std::string, std::uint64_t> memory_of(const ShardedTrainer& t) {
  std::map<std::string, std::uint64_t> m;
  for (const auto& [k, v] : t.memory_bytes()) m[k] = v;
  return m;
}

// Every (package, node, world) factorisation of n, as a Topology with all three levels declared.
inline std::vector<Topology> all_layouts(int n) {
  std::vector<Topology> out;
  for (int g = 1; g <= n; ++g)
    for (int nd = 1; g * nd <= n; ++nd)
      if (n % (g * nd) == 0) out.emplace_back(std::array<int, kNumLevels>{g, nd, n / (g * nd)}, std::vector<Level>{Level::package, Level::node, Level::world});
  return out;
}

// A small integer in [-8, 8] (or [0, 16] for uint8): sums over up to 8 ranks
// are exact in every type, so reductions can be checked for equality.
inline int value(int rank, std::size_t i, DType t) {
  const int v = static_cast<int>((rank * 7 + i * 3 + i / 5) % 17);
  return t == DType::u8 ? v : v - 8;
}

inline void store(DType t, void* buf, std::size_t i, double v) {
  switch (t) {
    case DType::f32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case DType::bf16: static_cast<std::uint16_t*>(buf)[i] = f32_to_bf16(static_cast<float>(v)); break;
    case DType::f16: static_cast<std::uint16_t*>(buf)[i] = f32_to_f16(static_cast<float>(v)); break;
    case DType::i8: static_cast<std::int8_t*>(buf)[i] = static_cast<std::int8_t>(v); break;
    case DType::u8: static_cast<std::uint8_t*>(buf)[i] = static_cast<std::uint8_t>(v); break;
  }
}

inline double load(DType t, const void* buf, std::size_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(buf)[i];
    case DType::bf16: return bf16_to_f32(static_cast<const std::uint16_t*>(buf)[i]);
    case DType::f16: return f16_to_f32(static_cast<const std::uint16_t*>(buf)[i]);
    case DType::i8: return static_cast<const std::int8_t*>(buf)[i];
    case DType::u8: return static_cast<const std::uint8_t*>(buf)[i];
  }
  return 0;
}

// A standard normal sample that is a pure, cheap function of (rank, i):
// Box-Muller on two splitmix64 hashes.
inline float gauss(int rank, std::size_t i) {
  auto mix = [](std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  const std::uint64_t h = mix((static_cast<std::uint64_t>(rank) << 40) ^ i);
  const double u1 = (static_cast<double>(h >> 11) + 1.0) * 0x1p-53, u2 = static_cast<double>(mix(h) >> 11) * 0x1p-53;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

inline std::vector<DType> all_dtypes() { return {DType::f32, DType::bf16, DType::f16, DType::i8, DType::u8}; }

inline std::size_t prod_below(const Topology& t, int l) {
  std::size_t p = 1;
  for (int i = 0; i < l; ++i) p *= t.fanout(static_cast<Level>(i));
  return p;
}

inline std::size_t prod_above(const Topology& t, int l) {
  std::size_t p = 1;
  for (int i = l + 1; i < kNumLevels; ++i) p *= t.fanout(static_cast<Level>(i));
  return p;
}

// Flat all-gather / reduce-scatter / all-to-all, `b` bytes per peer:
// level l carries b * prod_{i<l} f_i * (f_l - 1).
inline std::uint64_t flat_bytes(const Topology& t, int l, std::size_t b) {
  return b * prod_below(t, l) * (t.fanout(static_cast<Level>(l)) - 1);
}

// Hierarchical all-gather / reduce-scatter with a shard of `b` bytes:
// level l carries b * (f_l - 1) * prod_{i>l} f_i.
inline std::uint64_t hier_bytes(const Topology& t, int l, std::size_t b) {
  return b * (t.fanout(static_cast<Level>(l)) - 1) * prod_above(t, l);
}

// Expects the traffic counted since `before` to equal `expect` level by level.
inline void expect_traffic(const Communicator& c, const std::array<std::uint64_t, kNumLevels>& before,
                           const std::array<std::uint64_t, kNumLevels>& expect, const std::string& what) {
  const auto got = traffic_delta(before, c.traffic().snapshot());
  for (int l = 0; l < kNumLevels; ++l)
    EXPECT_EQ(got[l], expect[l]) << what << " level " << level_name(static_cast<Level>(l)) << " on " << c.topology().to_string();
}

}  // namespace tierzero::test
