#include "tierzero/topology.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <mutex>

#include "tierzero/error.h"

namespace tierzero {

std::string_view level_name(Level l) {
  switch (l) {
    case Level::package: return "package";
    case Level::node: return "node";
    case Level::world: return "world";
  }
  return "?";
}

namespace {
// Before the package level had its name it was spelled "gpu" (checkpoints and
// system files of that time still say so); read as package, said once.
constexpr std::string_view kLegacyPackageName = "gpu";

void warn_legacy_package_name() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::fprintf(stderr,
                 "tierzero: warning: level name 'gpu' is deprecated and read as 'package' (the ranks of one package); "
                 "write package=... in topologies, grad bits, plans and system files\n");
  });
}
}  // namespace

Level parse_level(std::string_view s) {
  for (Level l : kAllLevels)
    if (s == level_name(l)) return l;
  if (s == kLegacyPackageName) {
    warn_legacy_package_name();
    return Level::package;
  }
  TZ_THROW(ConfigError, "unknown level '" + std::string(s) + "' (expected package, node or world)");
}

Topology::Topology(std::array<int, kNumLevels> fanout, std::vector<Level> declared)
    : fanout_(fanout), declared_(std::move(declared)) {
  for (int f : fanout_) TZ_CHECK(f >= 1, TopologyError, "fan-out must be at least 1");
}

Topology Topology::flat(int world_size) { return Topology({1, 1, world_size}, {Level::world}); }

bool split_level_items(std::string_view spec, std::vector<LevelItem>& items) {
  items.clear();
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    std::size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view item = spec.substr(pos, comma - pos);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    items.push_back({item.substr(0, eq), item.substr(eq + 1)});
    pos = comma + 1;
  }
  return true;
}

bool parse_positive_int(std::string_view s, int& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= 1;
}

Topology Topology::parse(std::string_view spec, int world_size) {
  const std::string quoted = "topology '" + std::string(spec) + "'";
  std::vector<LevelItem> items;
  TZ_CHECK(split_level_items(spec, items), TopologyError,
           quoted + ": expected LEVEL=FANOUT items such as package=2,node=4,world=2");
  std::array<int, kNumLevels> fanout = {1, 1, 1};
  std::vector<Level> declared;
  for (const LevelItem& item : items) {
    Level level;
    try {
      level = parse_level(item.level);
    } catch (const ConfigError&) {
      TZ_THROW(TopologyError, quoted + ": unknown level '" + std::string(item.level) + "' (expected package, node or world)");
    }
    int value = 0;
    TZ_CHECK(parse_positive_int(item.value, value), TopologyError,
             quoted + ": fan-out of " + std::string(level_name(level)) + " must be a positive integer, got '" + std::string(item.value) + "'");
    TZ_CHECK(declared.empty() || static_cast<int>(declared.back()) < static_cast<int>(level), TopologyError,
             quoted + ": levels must appear once each, innermost first (package, node, world)");
    declared.push_back(level);
    fanout[static_cast<int>(level)] = value;
  }
  const int inner = fanout[0] * fanout[1];
  if (declared.back() != Level::world) {
    TZ_CHECK(world_size % inner == 0, TopologyError,
             quoted + " needs a multiple of " + std::to_string(inner) + " ranks but the job has " + std::to_string(world_size));
    fanout[2] = world_size / inner;
    declared.push_back(Level::world);
  }
  Topology t(fanout, declared);
  TZ_CHECK(t.size() == world_size, TopologyError,
           quoted + " has " + std::to_string(t.size()) + " ranks but the job has " + std::to_string(world_size));
  return t;
}

bool Topology::declares(Level l) const {
  for (Level d : declared_)
    if (d == l) return true;
  return false;
}

int Topology::coord(int rank, Level l) const {
  int r = rank;
  for (int i = 0; i < static_cast<int>(l); ++i) r /= fanout_[i];
  return r % fanout_[static_cast<int>(l)];
}

int Topology::rank_of(std::array<int, kNumLevels> c) const {
  return c[0] + fanout_[0] * (c[1] + fanout_[1] * c[2]);
}

Level Topology::separating_level(int a, int b) const {
  for (int i = kNumLevels - 1; i >= 0; --i)
    if (coord(a, static_cast<Level>(i)) != coord(b, static_cast<Level>(i))) return static_cast<Level>(i);
  TZ_THROW(TopologyError, "separating_level of a rank with itself");
}

namespace {
// Ranks whose coordinates equal those of `rank` at every level where keep[i]
// is true; the others vary over their fan-outs.
std::vector<int> members(const Topology& t, int rank, std::array<bool, kNumLevels> keep) {
  std::vector<int> out;
  std::array<int, kNumLevels> c{};
  for (int i = 0; i < kNumLevels; ++i) c[i] = t.coord(rank, static_cast<Level>(i));
  for (int r = 0; r < t.size(); ++r) {
    bool same = true;
    for (int i = 0; i < kNumLevels && same; ++i) same = !keep[i] || t.coord(r, static_cast<Level>(i)) == c[i];
    if (same) out.push_back(r);
  }
  return out;
}
}  // namespace

std::vector<int> Topology::group(Level l, int rank) const {
  std::array<bool, kNumLevels> keep{};
  for (int i = 0; i < kNumLevels; ++i) keep[i] = i > static_cast<int>(l);
  return members(*this, rank, keep);
}

std::vector<int> Topology::cross_group(Level l, int rank) const {
  std::array<bool, kNumLevels> keep{};
  for (int i = 0; i < kNumLevels; ++i) keep[i] = i <= static_cast<int>(l);
  return members(*this, rank, keep);
}

std::vector<int> Topology::hop_group(Level l, int rank) const {
  std::array<bool, kNumLevels> keep{};
  for (int i = 0; i < kNumLevels; ++i) keep[i] = i != static_cast<int>(l);
  return members(*this, rank, keep);
}

std::string Topology::to_string() const {
  std::string s;
  for (Level l : declared_) {
    if (!s.empty()) s += ',';
    s += std::string(level_name(l)) + "=" + std::to_string(fanout(l));
  }
  return s;
}

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_to_all: return "all_to_all";
    case Collective::all_to_allv: return "all_to_allv";
    case Collective::broadcast: return "broadcast";
    case Collective::barrier: return "barrier";
    case Collective::split: return "split";
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
