// The layout of a job: up to three levels of hierarchy, innermost first
// (package = the ranks of one package, e.g. the two GCDs of an MI250X;
// node; world), each with a fan-out. Ranks are numbered node-contiguously:
// r = c_package + f_package * (c_node + f_node * c_world).
// A level the job does not declare has fan-out 1. Value type, thread-safe to read.
//
// After the layout, how a collective is laid over its levels, as plain
// values shared by the hierarchical collectives (comm/hier/hierarchy.h),
// the plan (tierzero/plan.h), the systems' measured rates
// (tierzero/system.h) and the simulator: the kinds of collective, the
// decomposition of a collective into hops, and the bits each hop of a
// quantised reduction carries. Value types; no communication.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tierzero {

enum class Level : int { package = 0, node = 1, world = 2 };
inline constexpr int kNumLevels = 3;
inline constexpr std::array<Level, kNumLevels> kAllLevels = {Level::package, Level::node, Level::world};

std::string_view level_name(Level l);
// Parses "package", "node" or "world"; throws ConfigError. The old spelling
// "gpu" still reads as package, with a one-time deprecation warning on stderr.
Level parse_level(std::string_view name);

// One "LEVEL=VALUE" item of a comma-separated per-level list.
struct LevelItem {
  std::string_view level;
  std::string_view value;
};
// Splits "package=2,node=4" into items; false when an item is empty or has no
// '=' before its value (the caller names the list in its error).
bool split_level_items(std::string_view spec, std::vector<LevelItem>& items);
// Parses a whole string as a positive int; false otherwise.
bool parse_positive_int(std::string_view s, int& out);

class Topology {
 public:
  // One level spanning `world_size` ranks.
  static Topology flat(int world_size);
  // Parses "package=2,node=2,world=2" (levels innermost first, 1 to 3 of them,
  // in the order package, node, world). `world` may be omitted and is then
  // inferred from world_size. Throws TopologyError naming the problem when the
  // string is malformed or its product differs from world_size.
  static Topology parse(std::string_view spec, int world_size);
  // Builds a topology from explicit fan-outs (1 for absent levels).
  Topology(std::array<int, kNumLevels> fanout, std::vector<Level> declared);

  int size() const { return fanout_[0] * fanout_[1] * fanout_[2]; }
  int fanout(Level l) const { return fanout_[static_cast<int>(l)]; }
  // The levels the layout declares, innermost first.
  const std::vector<Level>& levels() const { return declared_; }
  bool declares(Level l) const;
  // Same fan-outs and declared levels (however each was spelled).
  bool operator==(const Topology&) const = default;
  // Coordinate of `rank` at `level`.
  int coord(int rank, Level l) const;
  // Rank with the given coordinates.
  int rank_of(std::array<int, kNumLevels> coords) const;
  // The outermost level at which the two ranks' coordinates differ
  // (the level whose link carries traffic between them). a != b.
  Level separating_level(int a, int b) const;
  // The members of group(level) that contains `rank`: ranks sharing every
  // coordinate above `level`, in rank order.
  std::vector<int> group(Level l, int rank) const;
  // The cross group(level) of `rank`: ranks with the same position inside
  // their group(level), one per group, in rank order.
  std::vector<int> cross_group(Level l, int rank) const;
  // The hop group at `level`: ranks sharing every coordinate except the one
  // at `level` (fan-out(level) members). Hierarchical collectives run one
  // step per hop group.
  std::vector<int> hop_group(Level l, int rank) const;
  // "package=2,node=2,world=2" for the declared levels.
  std::string to_string() const;

 private:
  std::array<int, kNumLevels> fanout_;
  std::vector<Level> declared_;
};


// The collectives a step is made of (the first four, which the simulator
// prices), and the rest of a communicator's operations: together the
// vocabulary of the order checker (tierzero/order_check.h) and the flight
// recorder (tierzero/flight_recorder.h).
enum class Collective : std::uint8_t { all_gather, reduce_scatter, all_reduce, all_to_all, all_to_allv, broadcast, barrier, split };
inline constexpr int kNumCollectives = 8;
std::string_view collective_name(Collective c);        // "all_gather", "reduce_scatter", ..., "split"
Collective parse_collective(std::string_view s);       // one of the first four; throws ConfigError naming them

// One hop per entry, innermost first, each hop the set of levels whose
// coordinates vary within it. {{package}, {node}, {world}} is the three-level
// scheme, {{package, node}, {world}} the two-level one of ZeRO++/MiCS
// (intra-node, inter-node), {{package, node, world}} flat.
using HopSpec = std::vector<std::vector<Level>>;
HopSpec three_level_hops();
HopSpec two_level_hops();
HopSpec flat_hops();

// The named decompositions a plan chooses from, and their HopSpecs.
enum class Decomposition { flat, two_level, three_level };
std::string_view decomposition_name(Decomposition d);
Decomposition parse_decomposition(std::string_view s);  // throws ConfigError
HopSpec hop_spec(Decomposition d);

// Bits of each hop of a quantised hierarchical reduction: 16 = unquantised
// (shipped in the tensor's own type), 8 or 4 = blockwise int8/int4.
struct HopBits {
  std::array<int, kNumLevels> bits = {16, 16, 16};
  int at(Level l) const { return bits[static_cast<int>(l)]; }
  // A hop spanning several levels uses the fewest bits any of them asks for
  // (the quantised reduce-scatter and the traffic model that prices it).
  int at_hop(const std::vector<Level>& levels) const;
  std::string to_string() const;
  bool operator==(const HopBits&) const = default;
};
// Parses "package=16,node=8,world=4"; omitted levels are 16. Throws ConfigError.
HopBits parse_hop_bits(std::string_view spec);

}  // namespace tierzero
