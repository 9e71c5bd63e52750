// How a collective is laid over the levels, as plain values shared by the
// hierarchical collectives (tierzero/hierarchy.h), the plan
// (tierzero/plan.h), the systems' measured rates (tierzero/system.h) and the
// simulator: the kinds of collective, the decomposition of a collective
// into hops, and the bits each hop of a quantised reduction carries.
// Value types; no communication.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "tierzero/topology.h"

namespace tierzero {

// The collectives a step is made of.
enum class Collective { all_gather, reduce_scatter, all_reduce, all_to_all };
std::string_view collective_name(Collective c);        // "all_gather", "reduce_scatter", "all_reduce", "all_to_all"
Collective parse_collective(std::string_view s);       // throws ConfigError naming the accepted names

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
};
// Parses "package=16,node=8,world=4"; omitted levels are 16. Throws ConfigError.
HopBits parse_hop_bits(std::string_view spec);

}  // namespace tierzero
