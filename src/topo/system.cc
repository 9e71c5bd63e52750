#include "tierzero/system.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>

#include "core/toml_read.h"
#include "topo/device_toml.h"

#include "tierzero/error.h"
#include "core/read_file.h"

namespace tierzero {

const LinkSpec& System::link(Level level) const {
  for (const LinkSpec& l : links)
    if (l.level == level) return l;
  TZ_THROW(ConfigError, "system '" + name + "' has no " + std::string(level_name(level)) + " level");
}

namespace {
// Linear interpolation of y over log(x) between (x0, y0) and (x1, y1), clamped.
double log_interpolate(double x, double x0, double y0, double x1, double y1) {
  if (x1 <= x0 || x <= x0) return x <= x0 ? y0 : y1;
  if (x >= x1) return y1;
  const double w = std::log(x / x0) / std::log(x1 / x0);
  return y0 + w * (y1 - y0);
}

// The points of one kind (nullopt: those of no kind).
struct Kind {
  std::optional<Collective> kind;
  bool has(const std::vector<RatePoint>& table) const {
    return std::any_of(table.begin(), table.end(), [&](const RatePoint& r) { return r.collective == kind; });
  }
};

int key_of(const RatePoint& r) { return r.groups > 0 ? r.groups : r.participants; }

// The table's bandwidth at `bytes` among its points of `kind` with key `k`.
double at_bytes(const std::vector<RatePoint>& table, Kind kind, int k, double bytes) {
  const RatePoint* below = nullptr;
  const RatePoint* above = nullptr;
  for (const RatePoint& r : table) {
    if (r.collective != kind.kind || key_of(r) != k) continue;
    if (r.bytes <= bytes && (!below || r.bytes > below->bytes)) below = &r;
    if (r.bytes >= bytes && (!above || r.bytes < above->bytes)) above = &r;
  }
  if (!below) return above->bandwidth_Bps;
  if (!above) return below->bandwidth_Bps;
  return log_interpolate(bytes, below->bytes, below->bandwidth_Bps, above->bytes, above->bandwidth_Bps);
}

// Interpolated over the key (groups or participants) among the points of `kind`.
double at_key(const std::vector<RatePoint>& table, Kind kind, int key, double bytes) {
  int lo = 0, hi = 0;  // the nearest keys at or below / at or above
  for (const RatePoint& r : table) {
    if (r.collective != kind.kind) continue;
    const int k = key_of(r);
    if (k <= key && k > lo) lo = k;
    if (k >= key && (hi == 0 || k < hi)) hi = k;
  }
  if (lo == 0) return at_bytes(table, kind, hi, bytes);
  if (hi == 0) return at_bytes(table, kind, lo, bytes);
  return log_interpolate(key, lo, at_bytes(table, kind, lo, bytes), hi, at_bytes(table, kind, hi, bytes));
}
}  // namespace

double LinkSpec::bandwidth_at(const RateQuery& q) const {
  if (achieved.empty()) return bandwidth_Bps;
  const auto own = [&](Collective c) { return Kind{c}.has(achieved); };
  if (q.collective == Collective::all_reduce && !own(Collective::all_reduce)) {
    RateQuery rs = q, ag = q;
    rs.collective = Collective::reduce_scatter, ag.collective = Collective::all_gather;
    return 2 / (1 / bandwidth_at(rs) + 1 / bandwidth_at(ag));
  }
  // The kinds whose points price q's, in order, indexed as Collective lists its kinds (all-reduce
  // reaches here only with points of its own).
  using C = Collective;
  static constexpr std::array<std::array<C, 3>, 4> fallbacks = {{{C::all_gather, C::reduce_scatter, C::reduce_scatter},
                                                                 {C::reduce_scatter, C::all_gather, C::all_gather},
                                                                 {C::all_reduce, C::all_reduce, C::all_reduce},
                                                                 {C::all_to_all, C::all_gather, C::reduce_scatter}}};
  const int key = keyed_by_groups() ? q.groups : q.participants;
  for (Collective c : fallbacks[static_cast<int>(q.collective)])
    if (own(c)) return at_key(achieved, Kind{c}, key, q.bytes);
  if (Kind{}.has(achieved)) return at_key(achieved, Kind{}, key, q.bytes);
  return bandwidth_Bps;
}

Topology System::topology(int ranks) const {
  std::array<int, kNumLevels> fanout = {1, 1, 1};
  std::vector<Level> declared;
  int inner = 1;
  std::string open;  // the inner levels whose fan-out the job gives
  for (const LinkSpec& l : links) {
    declared.push_back(l.level);
    if (l.level == Level::world) continue;
    if (l.fanout == 0) open += (open.empty() ? "" : ", ") + std::string(level_name(l.level));
    fanout[static_cast<int>(l.level)] = std::max(l.fanout, 1);
    inner *= std::max(l.fanout, 1);
  }
  TZ_CHECK(open.empty(), TopologyError, "system '" + name + "' does not fix the fan-out of " + open + "; give --topology with the levels the job has");
  TZ_CHECK(ranks > 0 && ranks % inner == 0, TopologyError,
           "system '" + name + "' has " + std::to_string(inner) + " ranks per node; " + std::to_string(ranks) + " ranks is not a multiple");
  fanout[2] = ranks / inner;
  return Topology(fanout, declared);
}

std::string System::to_toml() const {
  toml::table root;
  root.insert("name", name);
  write_device_keys(root, *this);
  root.insert("host_link_gbs", host_link_Bps / 1e9);
  root.insert("host_memory_gbs", host_memory_Bps / 1e9);
  root.insert("nvme_gbs", nvme_Bps / 1e9);
  root.insert("collectives", collectives == CollectiveLibrary::nccl ? "nccl" : "mpi");
  root.insert("overlap_forward", overlap.forward);
  root.insert("overlap_backward", overlap.backward);
  root.insert("overlap_reduce", overlap.reduce);
  root.insert("call_overhead_us", call_overhead_s / 1e-6);
  toml::array levels;
  for (const LinkSpec& l : links) {
    toml::table t;
    t.insert("name", std::string(level_name(l.level)));
    t.insert("fanout", l.fanout);
    t.insert("bandwidth_gbs", l.bandwidth_Bps / 1e9);
    t.insert("latency_us", l.latency_s / 1e-6);
    if (!l.source.empty()) t.insert("source", l.source);
    if (!l.achieved.empty()) {
      toml::array points;
      for (const RatePoint& r : l.achieved) {
        toml::table p;
        if (r.collective) p.insert("collective", std::string(collective_name(*r.collective)));
        p.insert("participants", r.participants);
        if (r.groups > 0) p.insert("groups", r.groups);
        p.insert("bytes", r.bytes);
        p.insert("bandwidth_gbs", r.bandwidth_Bps / 1e9);
        points.push_back(std::move(p));
      }
      t.insert("achieved", std::move(points));
    }
    levels.push_back(std::move(t));
  }
  root.insert("level", std::move(levels));
  std::ostringstream os;
  os << "# tierzero system description: per-rank, per-direction link figures per level, innermost first.\n"
     << "# fanout = 0 means 'as many as the job has' (the outermost level).\n"
     << root << "\n";
  return os.str();
}

namespace {
double number(const toml::node& n, const std::string& where) {
  const auto v = n.value<double>();
  TZ_CHECK(v && std::isfinite(*v), ConfigError, where + " must be a finite number");
  return *v;
}

void reject_unknown(const toml::table& t, const std::vector<std::string_view>& known, const std::string& where) {
  for (auto&& [k, v] : t) {
    bool ok = false;
    for (auto name : known) ok = ok || k.str() == name;
    TZ_CHECK(ok, ConfigError, where + ": unknown key '" + std::string(k.str()) + "'");
  }
}
}  // namespace

System parse_system_toml(std::string_view text, const std::string& origin) {
  const toml::table root = parse_toml(text, origin);
  std::vector<std::string_view> known = {"name", "based_on", "collectives", "overlap", "overlap_forward", "overlap_backward",
                                         "overlap_reduce", "call_overhead_us", "host_link_gbs", "host_memory_gbs", "nvme_gbs", "level"};
  for (const std::string& k : device_top_keys()) known.push_back(k);
  reject_unknown(root, known, origin);
  System s;
  if (const auto base = root["based_on"].value<std::string>()) s = device_preset(*base);  // a device preset's figures, overridden below
  else TZ_CHECK(root.contains("memory_gb") && root.contains("peak_tflops") && root.contains("memory_bandwidth_gbs"), ConfigError,
                origin + ": needs memory_gb, peak_tflops and memory_bandwidth_gbs (or based_on = \"DEVICE\", a device preset)");
  s.name = root["name"].value_or(std::string("custom"));
  read_device_keys(root, s, origin);
  for (auto [key, field] : {std::pair{"host_link_gbs", &System::host_link_Bps}, std::pair{"host_memory_gbs", &System::host_memory_Bps},
                            std::pair{"nvme_gbs", &System::nvme_Bps}}) {
    if (!root.contains(key)) continue;
    s.*field = number(*root.get(key), origin + ": " + key) * 1e9;
    TZ_CHECK(s.*field >= 0, ConfigError, origin + ": " + key + " must not be negative");
  }
  // "overlap" sets every kind; overlap_forward/backward/reduce override one each.
  if (root.contains("overlap")) {
    const double o = number(*root.get("overlap"), origin + ": overlap");
    TZ_CHECK(o >= 0 && o <= 1, ConfigError, origin + ": overlap must be in [0, 1]");
    s.overlap = {o, o, o};
  }
  for (auto [key, field] : {std::pair{"overlap_forward", &Overlap::forward}, std::pair{"overlap_backward", &Overlap::backward},
                            std::pair{"overlap_reduce", &Overlap::reduce}}) {
    if (!root.contains(key)) continue;
    const double o = number(*root.get(key), origin + ": " + key);
    TZ_CHECK(o >= 0 && o <= 1, ConfigError, origin + ": " + key + " must be in [0, 1]");
    s.overlap.*field = o;
  }
  if (root.contains("call_overhead_us")) s.call_overhead_s = number(*root.get("call_overhead_us"), origin + ": call_overhead_us") * 1e-6;
  TZ_CHECK(s.call_overhead_s >= 0 && s.call_overhead_s < 1, ConfigError, origin + ": call_overhead_us must be in [0, 1e6)");
  if (root.contains("collectives")) {
    const auto a = root["collectives"].value<std::string>();
    TZ_CHECK(a && (*a == "nccl" || *a == "mpi"), ConfigError, origin + ": collectives must be \"nccl\" or \"mpi\"");
    s.collectives = *a == "nccl" ? CollectiveLibrary::nccl : CollectiveLibrary::mpi;
  }
  const toml::array* levels = root["level"].as_array();
  TZ_CHECK(levels && !levels->empty(), ConfigError, origin + ": needs at least one [[level]] table");
  for (std::size_t i = 0; i < levels->size(); ++i) {
    const std::string where = origin + ": level[" + std::to_string(i) + "]";
    const toml::table* t = (*levels)[i].as_table();
    TZ_CHECK(t, ConfigError, where + " must be a table");
    reject_unknown(*t, {"name", "fanout", "bandwidth_gbs", "latency_us", "source", "achieved"}, where);
    LinkSpec l;
    auto lname = (*t)["name"].value<std::string>();
    TZ_CHECK(lname, ConfigError, where + ": missing key 'name'");
    l.level = parse_level(*lname);
    TZ_CHECK(s.links.empty() || static_cast<int>(s.links.back().level) < static_cast<int>(l.level), ConfigError,
             where + ": levels must be listed once each, innermost first");
    const std::int64_t fanout = (*t)["fanout"].value_or(int64_t{0});
    TZ_CHECK(fanout >= 0 && fanout <= 1 << 24, ConfigError, where + ": fanout must be between 0 and 16777216");
    l.fanout = static_cast<int>(fanout);
    TZ_CHECK(t->contains("bandwidth_gbs") && t->contains("latency_us"), ConfigError,
             where + ": needs bandwidth_gbs and latency_us");
    l.bandwidth_Bps = number(*t->get("bandwidth_gbs"), where + ": bandwidth_gbs") * 1e9;
    l.latency_s = number(*t->get("latency_us"), where + ": latency_us") * 1e-6;
    TZ_CHECK(l.bandwidth_Bps > 0 && l.latency_s >= 0, ConfigError, where + ": bandwidth must be > 0 and latency >= 0");
    l.source = (*t)["source"].value_or(std::string());
    if (t->contains("achieved")) {
      const toml::array* points = (*t)["achieved"].as_array();
      TZ_CHECK(points, ConfigError, where + ": achieved must be an array of {participants, bytes, bandwidth_gbs} tables");
      for (std::size_t k = 0; k < points->size(); ++k) {
        const std::string pw = where + ".achieved[" + std::to_string(k) + "]";
        const toml::table* pt = (*points)[k].as_table();
        TZ_CHECK(pt, ConfigError, pw + " must be a table");
        reject_unknown(*pt, {"participants", "bytes", "bandwidth_gbs", "collective", "groups"}, pw);
        TZ_CHECK(pt->contains("participants") && pt->contains("bytes") && pt->contains("bandwidth_gbs"), ConfigError,
                 pw + ": needs participants, bytes and bandwidth_gbs");
        const std::int64_t n = (*pt)["participants"].value_or(int64_t{0});
        RatePoint r{static_cast<int>(std::clamp<std::int64_t>(n, 0, 1 << 24)), number(*pt->get("bytes"), pw + ": bytes"),
                    number(*pt->get("bandwidth_gbs"), pw + ": bandwidth_gbs") * 1e9};
        TZ_CHECK(n >= 2 && n <= 1 << 24 && r.bytes > 0 && r.bandwidth_Bps > 0, ConfigError,
                 pw + ": participants must be 2 to 16777216, bytes and bandwidth_gbs positive");
        if (pt->contains("collective")) {
          const auto c = (*pt)["collective"].value<std::string>();
          TZ_CHECK(c, ConfigError, pw + ": collective must be a string");
          try {
            r.collective = parse_collective(*c);
          } catch (const ConfigError& e) {
            TZ_THROW(ConfigError, pw + ": " + e.message());
          }
        }
        if (pt->contains("groups")) {
          const std::int64_t g = (*pt)["groups"].value_or(int64_t{0});
          TZ_CHECK(g >= 2 && g <= n, ConfigError, pw + ": groups must be 2 to participants");
          r.groups = static_cast<int>(g);
        }
        TZ_CHECK(l.achieved.empty() || (l.achieved.front().groups > 0) == (r.groups > 0), ConfigError,
                 pw + ": a level's points are keyed either all by groups or none");
        l.achieved.push_back(r);
      }
    }
    s.links.push_back(std::move(l));
  }
  TZ_CHECK(s.links.back().level == Level::world, ConfigError, origin + ": the last level must be 'world'");
  return s;
}

System load_system(const std::string& name_or_path) {
  if (auto p = system_preset(name_or_path)) return *p;
  const auto text = read_file(name_or_path);
  if (!text) {
    std::string names;
    for (auto& n : system_preset_names()) names += (names.empty() ? "" : ", ") + n;
    TZ_THROW(ConfigError, "system '" + name_or_path + "' is neither a preset (" + names + ") nor a readable file");
  }
  return parse_system_toml(*text, name_or_path);
}

void save_system(const System& s, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    TZ_CHECK(out, ConfigError, "cannot write system file '" + path + "'");
    out << s.to_toml();
    TZ_CHECK(out.good(), ConfigError, "error writing system file '" + path + "'");
  }
  TZ_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, ConfigError, "cannot rename '" + tmp + "' to '" + path + "'");
}

}  // namespace tierzero
