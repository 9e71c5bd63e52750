#include "tierzero/hops.h"

#include <algorithm>

#include "tierzero/error.h"

namespace tierzero {

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_to_all: return "all_to_all";
  }
  return "?";
}

Collective parse_collective(std::string_view s) {
  for (Collective c : {Collective::all_gather, Collective::reduce_scatter, Collective::all_reduce, Collective::all_to_all})
    if (s == collective_name(c)) return c;
  TZ_THROW(ConfigError, "unknown collective '" + std::string(s) + "' (expected all_gather, reduce_scatter, all_reduce or all_to_all)");
}

HopSpec three_level_hops() { return {{Level::package}, {Level::node}, {Level::world}}; }
HopSpec two_level_hops() { return {{Level::package, Level::node}, {Level::world}}; }
HopSpec flat_hops() { return {{Level::package, Level::node, Level::world}}; }

std::string_view decomposition_name(Decomposition d) {
  switch (d) {
    case Decomposition::flat: return "flat";
    case Decomposition::two_level: return "two_level";
    case Decomposition::three_level: return "three_level";
  }
  return "?";
}

Decomposition parse_decomposition(std::string_view s) {
  if (s == "flat") return Decomposition::flat;
  if (s == "two_level") return Decomposition::two_level;
  if (s == "three_level") return Decomposition::three_level;
  TZ_THROW(ConfigError, "unknown collectives '" + std::string(s) + "' (expected flat, two_level or three_level)");
}

HopSpec hop_spec(Decomposition d) {
  switch (d) {
    case Decomposition::flat: return flat_hops();
    case Decomposition::two_level: return two_level_hops();
    case Decomposition::three_level: return three_level_hops();
  }
  return flat_hops();
}

HopBits parse_hop_bits(std::string_view spec) {
  const std::string quoted = "bits per hop '" + std::string(spec) + "'";
  std::vector<LevelItem> items;
  TZ_CHECK(split_level_items(spec, items), ConfigError, quoted + ": expected LEVEL=BITS items such as package=16,node=8,world=4");
  HopBits h;
  for (const LevelItem& item : items) {
    const Level level = parse_level(item.level);
    int bits = 0;
    TZ_CHECK(parse_positive_int(item.value, bits) && (bits == 16 || bits == 8 || bits == 4), ConfigError,
             quoted + ": bits of " + std::string(level_name(level)) + " must be 16, 8 or 4");
    h.bits[static_cast<int>(level)] = bits;
  }
  return h;
}

int HopBits::at_hop(const std::vector<Level>& levels) const {
  int b = 16;
  for (Level l : levels) b = std::min(b, at(l));
  return b;
}

std::string HopBits::to_string() const {
  std::string s;
  for (Level l : kAllLevels) s += (s.empty() ? "" : ",") + std::string(level_name(l)) + "=" + std::to_string(at(l));
  return s;
}

}  // namespace tierzero
