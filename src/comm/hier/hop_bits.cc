#include "tierzero/error.h"
#include "tierzero/hierarchy.h"

namespace tierzero {

HopBits parse_hop_bits(std::string_view spec) {
  const std::string quoted = "bits per hop '" + std::string(spec) + "'";
  std::vector<LevelItem> items;
  TZ_CHECK(split_level_items(spec, items), ConfigError, quoted + ": expected LEVEL=BITS items such as gpu=16,node=8,world=4");
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

std::string HopBits::to_string() const {
  std::string s;
  for (Level l : kAllLevels) s += (s.empty() ? "" : ",") + std::string(level_name(l)) + "=" + std::to_string(at(l));
  return s;
}

}  // namespace tierzero
