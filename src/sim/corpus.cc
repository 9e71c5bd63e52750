#include "tierzero/corpus.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <tuple>

#include "core/embedded_data.h"
#include "core/read_file.h"
#include "core/toml_read.h"
#include "model/model_file.h"
#include "sim/engine_toml.h"
#include "tierzero/error.h"
#include "tierzero/sensitivity.h"
#include "topo/device_toml.h"

namespace tierzero {

namespace {
// The system preset of a device: its DGX-like node, whose links a run's interconnect replaces.
std::string system_of(const std::string& gpu) {
  if (gpu == "a100-80gb") return "dgx-a100";
  if (gpu == "a100-40gb") return "dgx-a100-40";
  if (gpu == "h100-sxm") return "dgx-h100";
  if (gpu == "h200") return "dgx-h200";
  if (gpu == "gh200") return "gh200";
  if (gpu == "mi250x-gcd") return "frontier";
  if (gpu == "v100-sxm") return "dgx2-ib4";
  TZ_THROW(ConfigError, "no system preset for device '" + gpu + "'");
}

// A run's publication (PublishedRun::publication) from its url, or from its source where it has none.
std::string publication_of(const std::string& url, const std::string& source) {
  if (url.empty()) return source.substr(0, source.find(','));
  const std::size_t scheme = url.find("://");
  const std::string address = scheme == std::string::npos ? url : url.substr(scheme + 3);
  const std::string github = "github.com/";
  if (address.rfind(github, 0) != 0) return address;
  const std::size_t owner_end = address.find('/', github.size());
  const std::size_t repo_end = owner_end == std::string::npos ? owner_end : address.find('/', owner_end + 1);
  return address.substr(github.size(), repo_end == std::string::npos ? std::string::npos : repo_end - github.size());
}

// The overrides' tables: [devices.NAME] and [engines.NAME].
struct Overrides {
  toml::table root;
  std::string origin;
  const toml::table* of(const char* kind, const std::string& name) const {
    const toml::table* t = root[kind].as_table();
    return t ? (*t)[name].as_table() : nullptr;
  }
};

PublishedRun read_run(const toml::table& t, const std::string& where, const Overrides& over) {
  PublishedRun r;
  const auto text = [&](const char* key, bool required = true) {
    const toml::node* n = t.get(key);
    TZ_CHECK(n || !required, ConfigError, where + ": missing key '" + key + "'");
    return n ? get<std::string>(*n, key, where) : std::string();
  };
  const auto whole = [&](const char* key, std::int64_t lo) {
    const toml::node* n = t.get(key);
    TZ_CHECK(n, ConfigError, where + ": missing key '" + key + "'");
    return static_cast<int>(get_int(*n, key, where, lo));
  };
  const auto real = [&](const char* key, double fallback) {
    const toml::node* n = t.get(key);
    if (!n) return fallback;
    const double v = get<double>(*n, key, where);
    TZ_CHECK(std::isfinite(v) && v > 0, ConfigError, where + ": key '" + std::string(key) + "' must be positive");
    return v;
  };
  r.id = text("id"), r.half = text("half"), r.source = text("source"), r.gpu = text("gpu");
  r.publication = publication_of(text("url", false), r.source);
  TZ_CHECK(r.half == "fit" || r.half == "check", ConfigError, where + ": half must be \"fit\" or \"check\"");
  SimInput& in = r.input;
  // The cluster: the device's system preset, its node and network links as the source gives them.
  in.system = *system_preset(system_of(r.gpu));
  in.system.name = r.id;
  if (const toml::table* d = over.of("devices", r.gpu)) read_device_table(*d, in.system.device, over.origin + ": [devices." + r.gpu + "]");
  in.ranks = whole("gpus", 1);
  const int per_node = std::min(whole("gpus_per_node", 1), in.ranks);
  for (LinkSpec& l : in.system.links) {
    if (l.level == Level::node) {
      l.fanout = per_node / (in.system.links.front().level == Level::package ? in.system.links.front().fanout : 1);
      l.bandwidth_Bps = real("node_gbs", l.bandwidth_Bps / 1e9) * 1e9;
    }
    if (l.level == Level::world) l.bandwidth_Bps = real("world_gbs", l.bandwidth_Bps / 1e9) * 1e9;
  }
  // The engine, with the run's mixed precision and loss over its defaults.
  in.engine = engine_profile(text("engine"));
  if (const toml::table* e = over.of("engines", in.engine.name)) read_engine_keys(*e, in.engine, over.origin + ": [engines." + in.engine.name + "]");
  if (const toml::node* n = t.get("reduce_bytes")) in.engine.reduce_bytes = static_cast<int>(get_int(*n, "reduce_bytes", where, 1, 8));
  if (const toml::node* n = t.get("fused_loss")) in.engine.fused_loss = get<bool>(*n, "fused_loss", where);
  if (const toml::node* n = t.get("tp_comm_overlap")) in.engine.tp_comm_overlap = get<bool>(*n, "tp_comm_overlap", where);
  if (const std::string prefetch = text("backward_prefetch", false); !prefetch.empty())
    in.engine.backward_prefetch = parse_backward_prefetch(prefetch, where);
  in.attention = text("attention", false);
  in.model_code = model_code(text("model_code", false));
  const std::string precision = text("precision");
  TZ_CHECK(precision == "bf16" || precision == "fp8", ConfigError, where + ": precision must be \"bf16\" or \"fp8\"");
  in.fp8 = precision == "fp8";
  const toml::table* model = t["model"].as_table();
  TZ_CHECK(model, ConfigError, where + ": missing table 'model' (docs/models.md's keys)");
  read_model_table(*model, where, "model.", in.model);
  in.seq_len = whole("seq_len", 1), in.micro_batch = whole("micro_batch", 1), in.grad_accum = whole("grad_accum", 1);
  in.recompute = Recompute::parse(text("recompute"));
  // Model parallelism as the source states it (none where it states none): tensor (with sequence parallelism),
  // pipeline stages and schedule, context parallelism; each on its default level.
  const auto degree = [&](const char* key) {
    const toml::node* n = t.get(key);
    return n ? static_cast<int>(get_int(*n, key, where, 1)) : 1;
  };
  in.mesh.tp = degree("tp");
  if (const toml::node* n = t.get("sp")) in.mesh.sp = get<bool>(*n, "sp", where);
  in.pipeline.stages = degree("pp");
  if (const std::string schedule = text("pp_schedule", false); !schedule.empty()) in.pipeline.set_schedule(schedule);
  if (const std::string split = text("pp_split", false); !split.empty()) in.pipeline.set_split(split);
  in.context.degree = degree("cp");
  if (const std::string kind = text("cp_kind", false); !kind.empty()) in.context.kind = ContextShape::parse_kind(kind);
  in.plan = fit_to(strategy_plan(text("strategy")), in.data_topology());
  r.oom = t["oom"].value_or(false);
  if (const toml::node* n = t.get("network_stated")) r.network_stated = get<bool>(*n, "network_stated", where);
  r.tokens_per_s_per_gpu = real("tokens_per_s_per_gpu", 0);
  r.speedup = real("speedup", 0);
  const int figures = (r.oom ? 1 : 0) + (r.tokens_per_s_per_gpu > 0 ? 1 : 0) + (r.speedup > 0 ? 1 : 0);
  TZ_CHECK(figures == 1, ConfigError, where + ": needs one figure: tokens_per_s_per_gpu, oom = true, or speedup with an over table");
  TZ_CHECK((r.speedup > 0) == (t.get("over") != nullptr), ConfigError, where + ": speedup and over go together");
  return r;
}

// A ratio's second configuration: the row with its `over` table's keys in
// place of its own, read as a run of its own.
SimInput read_over(const toml::table& t, const std::string& where, const Overrides& over) {
  const toml::table* changes = t["over"].as_table();
  TZ_CHECK(changes && !changes->empty(), ConfigError, where + ": over must be a table of the keys that differ (strategy, gpus, ...)");
  toml::table base = t;
  for (const char* key : {"over", "speedup"}) base.erase(key);
  for (auto&& [k, v] : *changes) {
    const std::string key(k.str());
    TZ_CHECK(key != "id" && key != "half" && key != "over" && key != "speedup" && key != "oom" && key != "tokens_per_s_per_gpu", ConfigError,
             where + ": over may not change '" + key + "'");
    base.insert_or_assign(key, v);
  }
  base.insert_or_assign("tokens_per_s_per_gpu", 1.0);  // a placeholder figure: only the configuration is read
  return read_run(base, where + " (over)", over).input;
}
}  // namespace

std::vector<PublishedRun> parse_corpus(std::string_view text, const std::string& origin, const CorpusOverrides& overrides) {
  const toml::table root = parse_toml(text, origin);
  Overrides over;
  if (!overrides.text.empty()) over.root = parse_toml(overrides.text, overrides.origin), over.origin = overrides.origin;
  const toml::array* runs = root["run"].as_array();
  TZ_CHECK(runs && !runs->empty(), ConfigError, origin + ": needs [[run]] tables");
  std::vector<PublishedRun> out;
  for (std::size_t i = 0; i < runs->size(); ++i) {
    const toml::table* t = (*runs)[i].as_table();
    TZ_CHECK(t, ConfigError, origin + ": run[" + std::to_string(i) + "] must be a table");
    const std::string where = origin + ": run " + (*t)["id"].value_or(std::string("[") + std::to_string(i) + "]");
    try {
      out.push_back(read_run(*t, where, over));
      if (out.back().ratio()) out.back().over = read_over(*t, where, over);
    } catch (const TopologyError& e) {
      TZ_THROW(ConfigError, where + ": " + e.message());
    } catch (const ConfigError& e) {  // a preset's own error (strategy, engine, device): named with the run
      if (e.message().rfind(where, 0) == 0) throw;
      TZ_THROW(ConfigError, where + ": " + e.message());
    }
    for (std::size_t j = 0; j + 1 < out.size(); ++j)
      TZ_CHECK(out[j].id != out.back().id, ConfigError, where + ": id listed twice");
  }
  return out;
}

std::vector<PublishedRun> load_corpus(const std::string& path, const std::string& overrides_path) {
  CorpusOverrides over;
  if (!overrides_path.empty()) {
    const auto text = read_file(overrides_path);
    TZ_CHECK(text, ConfigError, "cannot read '" + overrides_path + "'");
    over = {*text, overrides_path};
  }
  if (path.empty()) return parse_corpus(builtin_corpus_text(), "data/published-runs.toml", over);
  const auto text = read_file(path);
  TZ_CHECK(text, ConfigError, "cannot read corpus '" + path + "'");
  return parse_corpus(*text, path, over);
}

std::string_view builtin_corpus_text() {
  const auto& files = embedded_files("corpus");
  return files.empty() ? std::string_view() : files.front().second;
}

const std::vector<PublishedRun>& builtin_corpus() {
  static const std::vector<PublishedRun> runs = parse_corpus(builtin_corpus_text(), "data/published-runs.toml");
  return runs;
}

namespace {
// The run's prediction (tokens/s per GPU, or its ratio) with every level's bandwidth times `network`.
double predicted_at(const PublishedRun& r, double network) {
  const double own = simulate(with_efficiency(r.input, network, 1)).tokens_per_s_per_device;
  return r.ratio() ? own / simulate(with_efficiency(r.over, network, 1)).tokens_per_s_per_device : own;
}
}  // namespace

std::vector<RunCheck> check_corpus(const std::vector<PublishedRun>& runs, bool network_ranges) {
  std::vector<RunCheck> out;
  out.reserve(runs.size());
  for (const PublishedRun& r : runs) {
    RunCheck c;
    c.run = &r;
    c.result = simulate(r.input);
    c.predicted = c.result.tokens_per_s_per_device;
    c.fits = c.result.fits;
    if (r.ratio()) {
      c.over_result = simulate(r.over);
      c.predicted /= c.over_result.tokens_per_s_per_device;
      c.fits = c.fits && c.over_result.fits;
      c.error = c.predicted / r.speedup - 1;
    } else if (!r.oom) {
      c.error = c.predicted / r.tokens_per_s_per_gpu - 1;
    }
    if (network_ranges && !r.network_stated && !r.oom && r.input.topology().fanout(Level::world) > 1)
      c.network_low = predicted_at(r, 1 - kSensitivity), c.network_high = predicted_at(r, 1 + kSensitivity);
    out.push_back(std::move(c));
  }
  return out;
}

namespace {
// The median and the largest of `v` (0 for none).
std::pair<double, double> median_and_max(std::vector<double> v) {
  if (v.empty()) return {0, 0};
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v.back()};
}
}  // namespace

CorpusSummary summarize(const std::vector<RunCheck>& checks) {
  CorpusSummary s;
  std::vector<double> errors, ratio_errors, below_limit;
  for (const RunCheck& c : checks) {
    if (c.run->oom) {
      ++s.oom;
      s.oom_fitting += c.fits ? 1 : 0;
      continue;
    }
    s.trained_not_fitting += c.fits ? 0 : 1;
    if (c.network_range()) {
      const double published = c.run->ratio() ? c.run->speedup : c.run->tokens_per_s_per_gpu;
      ++s.network_ranges;
      s.within_network_range += published >= c.network_low && published <= c.network_high ? 1 : 0;
    }
    if (c.run->ratio()) {
      ++s.ratios;
      ratio_errors.push_back(std::abs(c.error));
    } else {
      ++s.trained;
      errors.push_back(std::abs(c.error));
      if (!c.result.at_memory_limit) below_limit.push_back(std::abs(c.error));
      s.at_limit += c.result.at_memory_limit ? 1 : 0;
      s.at_limit_within_bound += c.result.at_memory_limit && c.error >= 0 ? 1 : 0;
    }
  }
  std::tie(s.median_abs_error, s.max_abs_error) = median_and_max(errors);
  s.max_abs_error_below_limit = median_and_max(below_limit).second;
  std::tie(s.ratio_median_abs_error, s.ratio_max_abs_error) = median_and_max(ratio_errors);
  return s;
}

std::vector<SourceSummary> summarize_by_source(const std::vector<RunCheck>& checks) {
  std::map<std::string, std::vector<double>> errors;
  for (const RunCheck& c : checks)
    if (!c.run->oom) errors[c.run->publication].push_back(std::abs(c.error));
  std::vector<SourceSummary> out;
  for (const auto& [source, e] : errors) {
    const auto [median, max] = median_and_max(e);
    out.push_back({source, static_cast<int>(e.size()), median, max});
  }
  return out;
}

std::vector<RunCheck> select(const std::vector<RunCheck>& checks, const std::string& gpu, const std::string& engine) {
  std::vector<RunCheck> out;
  for (const RunCheck& c : checks)
    if ((gpu.empty() || c.run->gpu == gpu) && (engine.empty() || c.run->input.engine.name == engine)) out.push_back(c);
  return out;
}

namespace {
const std::vector<RunCheck>& builtin_checks() {
  static const std::vector<RunCheck> checks = check_corpus(builtin_corpus());
  return checks;
}
}  // namespace

std::string uncalibrated(const DeviceSpec& device) {
  if (device.source_of("gemm_efficiency").rfind("measured", 0) == 0) return "";
  const std::string& gpu = device.name;
  if (gpu.empty())
    return "the system file names no device preset (based_on): its figures are its own, none of them checked against the corpus";
  const CorpusSummary s = summarize(select(builtin_checks(), gpu, ""));
  if (s.trained + s.ratios > 0) return "";
  return "no published run on " + gpu + " in the corpus (data/published-runs.toml) checks its figures";
}

namespace {
bool model_parallel(const RunCheck& c) {
  const SimInput& in = c.run->input;
  return in.mesh.tp > 1 || in.pipeline.stages > 1 || in.context.degree > 1;
}
}  // namespace

std::string error_band(const DeviceSpec& device, const std::string& engine, bool parallel) {
  if (const std::string why = uncalibrated(device); !why.empty()) return "does not apply: the device is uncalibrated: " + why;
  const std::string& gpu = device.name;
  std::vector<RunCheck> runs = select(builtin_checks(), gpu, engine);
  if (parallel) std::erase_if(runs, [](const RunCheck& c) { return !model_parallel(c); });
  const CorpusSummary s = summarize(runs);
  const std::string what = gpu + " " + engine + (parallel ? " tensor-, pipeline- or context-parallel" : "");
  if (s.trained == 0 && s.ratios > 0)  // only ratios of two runs' throughput (the Frontier paper's): the ratio is checked
    return fmt::format("+-{:.1f}% (median |error|; largest {:.1f}%) over {} published {} speedup{} (ratios of two configurations' "
                       "throughput; tierzero validate); no absolute throughput on it in the corpus",
                       100 * s.ratio_median_abs_error, 100 * s.ratio_max_abs_error, s.ratios, what, s.ratios == 1 ? "" : "s");
  if (s.trained == 0 && parallel)
    return "does not apply: the corpus (data/published-runs.toml) has no tensor-, pipeline- or context-parallel run on " +
           (gpu.empty() ? std::string("this system's device") : gpu) + " under " + engine + ": the prediction is unchecked";
  if (s.trained == 0)
    return "no published run on " + (gpu.empty() ? std::string("this system's device") : gpu) + " under " + engine +
           " in the corpus (data/published-runs.toml): the prediction is unchecked";
  return fmt::format("+-{:.1f}% (median |error|; largest {:.1f}%) over {} published {} run{} (tierzero validate)",
                     100 * s.median_abs_error, 100 * s.max_abs_error, s.trained, what, s.trained == 1 ? "" : "s");
}

}  // namespace tierzero
