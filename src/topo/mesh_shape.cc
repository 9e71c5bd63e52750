// MeshShape (tierzero/mesh_shape.h).
#include <array>
#include <string>

#include "tierzero/error.h"
#include "tierzero/mesh_shape.h"

namespace tierzero {

Level MeshShape::level(const Topology& world) const { return tp_level ? *tp_level : world.levels().front(); }

Topology MeshShape::data_topology(const Topology& world) const {
  const std::string degree = "tp = " + std::to_string(tp);
  TZ_CHECK(tp >= 1, ConfigError, degree + ": the tensor-parallel degree must be at least 1");
  return factor_level(world, level(world), tp, degree, "tp_level");
}

Topology factor_level(const Topology& world, Level l, int degree, const std::string& degree_name, const std::string& level_key) {
  TZ_CHECK(world.declares(l), ConfigError,
           level_key + " " + std::string(level_name(l)) + ": the job's topology " + world.to_string() + " has no such level");
  TZ_CHECK(world.fanout(l) % degree == 0, ConfigError,
           degree_name + " does not divide the " + std::string(level_name(l)) + " level's fan-out " + std::to_string(world.fanout(l)) +
               " (topology " + world.to_string() + ")");
  std::array<int, kNumLevels> fanout{};
  for (int i = 0; i < kNumLevels; ++i) fanout[i] = world.fanout(static_cast<Level>(i));
  fanout[static_cast<int>(l)] /= degree;
  return Topology(fanout, world.levels());
}

std::vector<int> MeshShape::tensor_group(const Topology& world, int rank) const {
  const int l = static_cast<int>(level(world));
  std::array<int, kNumLevels> c{};
  for (int i = 0; i < kNumLevels; ++i) c[i] = world.coord(rank, static_cast<Level>(i));
  const int first = c[l] - c[l] % tp;
  std::vector<int> members;
  for (int i = 0; i < tp; ++i) {
    c[l] = first + i;
    members.push_back(world.rank_of(c));
  }
  return members;
}

void MeshShape::check_sp(int seq_len) const {
  if (!sp) return;
  TZ_CHECK(tp > 1, ConfigError, "sp: sequence parallelism needs tp > 1 (tp = " + std::to_string(tp) + ")");
  TZ_CHECK(seq_len % tp == 0, ConfigError,
           "sp: tp = " + std::to_string(tp) + " does not divide the sequence length " + std::to_string(seq_len));
}

}  // namespace tierzero
