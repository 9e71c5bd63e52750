// Plans as TOML files (tierzero/plan.h, docs/formats.md, "Plan file"): the
// [plan] table read and written, and the strategies shipped as such files.
#include <cstdio>
#include <limits>
#include <fstream>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "core/embedded_data.h"
#include "core/read_file.h"
#include "core/toml_read.h"
#include "tierzero/error.h"
#include "tierzero/plan.h"

namespace tierzero {

namespace {
constexpr const char* kWholeBucket = "whole";  // bucket_bytes: one bucket, the whole gradient (zero1)
constexpr const char* kWholeMessage = "whole";  // hop_chunk_bytes: each hop on the whole message, one after the other

// A value parsed by name (a level, a decomposition, hop bits), its error naming the file and key.
template <class Parse>
auto named(const toml::node& v, const std::string& key, const std::string& origin, Parse parse) {
  const std::string s = get<std::string>(v, key, origin);
  try {
    return parse(s);
  } catch (const ConfigError& e) {
    TZ_THROW(ConfigError, origin + ": key '" + key + "': " + e.message());
  }
}

int read_bits(const toml::node& v, const std::string& key, const std::string& origin) {
  const std::int64_t b = get<std::int64_t>(v, key, origin);
  TZ_CHECK(b == 16 || b == 8 || b == 4, ConfigError,
           origin + ": key '" + key + "': the quantiser does 16 (unquantised), 8 or 4 bits, got " + std::to_string(b));
  return static_cast<int>(b);
}

void read_offload(const toml::node& n, const std::string& key, const std::string& origin, OffloadPlacement& o) {
  const toml::table* t = n.as_table();
  TZ_CHECK(t, ConfigError, origin + ": key '" + key + "' must be a table (device, nvme_path, buffers)");
  for (auto&& [k, v] : *t) {
    const std::string sub = key + "." + std::string(k.str());
    if (k == "device") o.device = named(v, sub, origin, parse_offload);
    else if (k == "nvme_path") o.nvme_path = get<std::string>(v, sub, origin);
    else if (k == "buffers") o.buffers = static_cast<int>(get_int(v, sub, origin, 1, 1024));
    else TZ_THROW(ConfigError, origin + ": unknown key '" + sub + "'");
  }
}

// Reads the [plan] table; keys it does not give keep Plan's defaults.
PlanFile read_plan_table(const toml::node& n, const std::string& origin) {
  const toml::table* t = n.as_table();
  TZ_CHECK(t, ConfigError, origin + ": key 'plan' must be a table");
  PlanFile f;
  f.origin = origin;
  Plan& p = f.plan;
  for (auto&& [k, v] : *t) {
    const std::string key = "plan." + std::string(k.str());
    if (k == "name") p.name = get<std::string>(v, key, origin);
    else if (k == "fit_to_topology") f.fit_to_topology = get<bool>(v, key, origin);
    else if (k == "tp") f.tp = static_cast<int>(get_int(v, key, origin, 1, 1 << 20));
    else if (k == "tp_level") f.tp_level = named(v, key, origin, parse_level);
    else if (k == "sp") f.sp = get<bool>(v, key, origin);
    else if (k == "params") p.params = named(v, key, origin, parse_partition);
    else if (k == "bwd_params") p.bwd_params = named(v, key, origin, parse_partition);
    else if (k == "grads") p.grads = named(v, key, origin, parse_partition);
    else if (k == "optim") p.optim = named(v, key, origin, parse_partition);
    else if (k == "weight_bits") p.weight_bits = read_bits(v, key, origin);
    else if (k == "grad_bits") p.grad_bits = named(v, key, origin, parse_hop_bits);
    else if (k == "gather") p.gather = named(v, key, origin, parse_decomposition);
    else if (k == "reduce") p.reduce = named(v, key, origin, parse_decomposition);
    else if (k == "quant_block") p.quant_block = static_cast<std::size_t>(get_int(v, key, origin, 1));
    else if (k == "bucket_bytes" && v.is_string()) {
      TZ_CHECK(*v.value<std::string>() == kWholeBucket, ConfigError,
               origin + ": key '" + key + "' must be a number of bytes or \"" + kWholeBucket + "\"");
      p.bucket_bytes = ~std::size_t{0};
    } else if (k == "bucket_bytes") p.bucket_bytes = static_cast<std::size_t>(get_int(v, key, origin, 1, std::numeric_limits<std::int64_t>::max()));
    else if (k == "hop_chunk_bytes" && v.is_string()) {
      TZ_CHECK(*v.value<std::string>() == kWholeMessage, ConfigError,
               origin + ": key '" + key + "' must be a number of bytes or \"" + kWholeMessage + "\"");
      p.hop_chunk_bytes = 0;
    } else if (k == "hop_chunk_bytes") p.hop_chunk_bytes = static_cast<std::size_t>(get_int(v, key, origin, 1, std::numeric_limits<std::int64_t>::max()));
    else if (k == "prefetch") p.prefetch = static_cast<int>(get_int(v, key, origin, 0, 8));
    else if (k == "persist_threshold") p.persist_threshold = static_cast<std::size_t>(get_int(v, key, origin, 0, std::numeric_limits<std::int64_t>::max()));
    else if (k == "optim_offload") read_offload(v, key, origin, p.optim_offload);
    else if (k == "param_offload") read_offload(v, key, origin, p.param_offload);
    else TZ_THROW(ConfigError, origin + ": unknown key '" + key + "'");
  }
  return f;
}

// A TOML basic string: JSON's escapes (\" \\ \n \uXXXX ...) are TOML's too.
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

std::string offload_text(const char* table, const OffloadPlacement& o) {
  std::string s = "\n[plan." + std::string(table) + "]\ndevice = \"" + std::string(offload_name(o.device)) + "\"\n";
  if (!o.nvme_path.empty()) s += "nvme_path = " + quoted(o.nvme_path) + "\n";
  return s + "buffers = " + std::to_string(o.buffers) + "\n";
}
}  // namespace

Plan PlanFile::for_topology(const Topology& topo) const {
  Plan p = plan;
  if (fit_to_topology) {
    p = fit_to(p, topo);
  } else {
    const std::pair<const char*, const Partition*> states[] = {
        {"params", &p.params}, {"bwd_params", &p.bwd_params}, {"grads", &p.grads}, {"optim", &p.optim}};
    for (const auto& [key, level] : states)
      TZ_CHECK(!*level || topo.declares(**level), ConfigError,
               origin + ": key 'plan." + key + "': level " + partition_name(*level) + " is not in the topology " + topo.to_string() +
                   " (a plan written for another layout; fit_to_topology = true takes the next level outwards)");
  }
  try {
    p.validate(topo);
  } catch (const ConfigError& e) {
    TZ_THROW(ConfigError, origin + ": " + e.message());
  }
  return p;
}

PlanFile parse_plan_file(std::string_view text, const std::string& origin) {
  const toml::table root = parse_toml(text, origin);
  for (auto&& [k, v] : root)
    TZ_CHECK(k == "plan", ConfigError, origin + ": unknown key '" + std::string(k.str()) + "' (a plan file holds one [plan] table)");
  const toml::node* plan = root.get("plan");
  TZ_CHECK(plan, ConfigError, origin + ": no [plan] table");
  return read_plan_table(*plan, origin);
}

PlanFile read_plan_file(const std::string& path) {
  const auto text = read_file(path);
  TZ_CHECK(text, ConfigError, "cannot read plan file '" + path + "'");
  return parse_plan_file(*text, path);
}

std::optional<PlanFile> read_config_plan(const std::string& path) {
  const auto text = read_file(path);
  TZ_CHECK(text, ConfigError, "cannot read config file '" + path + "'");
  const toml::table root = parse_toml(*text, path);
  const toml::node* plan = root.get("plan");
  if (!plan) return std::nullopt;
  return read_plan_table(*plan, path);
}

std::string plan_file_text(const Plan& p, bool fit_to_topology, const std::vector<std::string>& comment, int tp,
                           std::optional<Level> tp_level, bool sp) {
  std::string s;
  for (const std::string& line : comment) s += "# " + line + "\n";
  const auto level = [](const Partition& x) { return "\"" + partition_name(x) + "\""; };
  s += "[plan]\nname = " + quoted(p.name) + "\n";
  s += "fit_to_topology = " + std::string(fit_to_topology ? "true" : "false") +
       "  # true: a level the job lacks becomes the next one outwards\n";
  if (tp > 1) {
    s += "tp = " + std::to_string(tp) + "  # tensor-parallel degree: the levels below are the data-parallel ranks'\n";
    if (tp_level) s += "tp_level = \"" + std::string(level_name(*tp_level)) + "\"\n";
    if (sp) s += "sp = true  # sequence parallelism between the tensor-parallel regions\n";
  }
  s += "params = " + level(p.params) + "  # the level each state is partitioned over, or \"replicated\"\n";
  s += "bwd_params = " + level(p.bwd_params) + "\ngrads = " + level(p.grads) + "\noptim = " + level(p.optim) + "\n";
  s += "weight_bits = " + std::to_string(p.weight_bits) + "  # the forward all-gather: 16 (unquantised), 8 or 4\n";
  s += "grad_bits = \"" + p.grad_bits.to_string() + "\"  # per hop of the gradient reduce-scatter\n";
  s += "gather = \"" + std::string(decomposition_name(p.gather)) + "\"  # flat, two_level or three_level\n";
  s += "reduce = \"" + std::string(decomposition_name(p.reduce)) + "\"\n";
  s += "quant_block = " + std::to_string(p.quant_block) + "  # elements per quantisation block\n";
  s += "bucket_bytes = " +
       (p.bucket_bytes == ~std::size_t{0} ? "\"" + std::string(kWholeBucket) + "\"" : std::to_string(p.bucket_bytes)) +
       "  # gradient bucket; \"whole\": one, reduced after backward\n";
  s += "hop_chunk_bytes = " + (p.hop_chunk_bytes == 0 ? "\"" + std::string(kWholeMessage) + "\"" : std::to_string(p.hop_chunk_bytes)) +
       "  # pipelined hops: bytes of each rank's part per chunk; \"whole\": one hop after the other\n";
  s += "prefetch = " + std::to_string(p.prefetch) + "  # units gathered ahead of the one computing\n";
  s += "persist_threshold = " + std::to_string(p.persist_threshold) + "  # units of at most this many parameters stay whole\n";
  return s + offload_text("optim_offload", p.optim_offload) + offload_text("param_offload", p.param_offload);
}

void write_plan_file(const std::string& path, const Plan& plan, const std::vector<std::string>& comment, int tp,
                     std::optional<Level> tp_level, bool sp) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    TZ_CHECK(out, ConfigError, "cannot write plan file '" + path + "'");
    out << plan_file_text(plan, false, comment, tp, tp_level, sp);
    TZ_CHECK(out.good(), ConfigError, "error writing plan file '" + path + "'");
  }
  TZ_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, ConfigError, "cannot rename '" + tmp + "' to '" + path + "'");
}

std::vector<std::string> strategy_names() { return embedded_names("plans"); }

PlanFile strategy_plan_file(std::string_view name) {
  if (const auto text = embedded_text("plans", name)) return parse_plan_file(*text, "data/plans/" + std::string(name) + ".toml");
  std::string names;
  for (auto& n : strategy_names()) names += (names.empty() ? "" : ", ") + n;
  TZ_THROW(ConfigError, "unknown strategy '" + std::string(name) + "' (expected " + names + ")");
}

Plan strategy_plan(std::string_view name) { return strategy_plan_file(name).plan; }

}  // namespace tierzero
