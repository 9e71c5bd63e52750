// DeepSpeed JSON configs: DeepSpeed's defaults, the keys that map onto
// tierzero, and the batch rule (tierzero/deepspeed_config.h; the key table
// is deepspeed_keys.cc).
#include "tierzero/deepspeed_config.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "tierzero/error.h"
#include "core/read_file.h"

namespace tierzero {

namespace {
// DeepSpeed's default for stage3_param_persistence_threshold (the
// DeepSpeedZeroConfig field param_persistence_threshold, 1e5 elements). It
// marks each tensor of at most that many elements persistent; a tierzero
// unit at or under it is made of such tensors only, so what tierzero keeps
// whole DeepSpeed keeps whole too.
constexpr std::int64_t kDeepSpeedPersistenceThreshold = 100000;
// DeepSpeed's FusedAdam and DeepSpeedCPUAdam defaults (deepspeed/ops/adam),
// and torch.optim.AdamW's weight decay, which "torch_adam": true selects.
constexpr float kAdamLr = 1e-3f, kAdamBeta1 = 0.9f, kAdamBeta2 = 0.999f, kAdamEps = 1e-8f, kTorchAdamWDecay = 0.01f;
// WarmupDecayLR's warmup_max_lr and every scheduler's warmup_num_steps (deepspeed/runtime/lr_schedules.py).
constexpr float kWarmupMaxLr = 1e-3f;
constexpr std::int64_t kWarmupSteps = 1000;
// offload_optimizer's and offload_param's buffer_count (deepspeed/runtime/zero/offload_config.py).
constexpr int kOptimizerBuffers = 4, kParamBuffers = 5;

// Why a key the parser declines is not implemented (deepspeed_keys()'s note), after the key in the list of ignored keys.
std::string ignored_reason(const std::string& path) {
  for (const DeepSpeedKey& k : deepspeed_keys())
    if (k.path == path && !k.note.empty()) return " (" + std::string(k.note) + ")";
  return "";
}

using nlohmann::json;

// Reads one config file: every value checked with the file and the dotted
// key in its error; "auto" (Hugging Face's integration) keeps tierzero's
// value and is recorded.
class Reader {
 public:
  Reader(std::string origin, DeepSpeedMapping& out) : origin_(std::move(origin)), out_(out) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    TZ_THROW(ConfigError, origin_ + ": '" + path + "' " + what);
  }
  // True (and recorded) when the value is "auto".
  bool is_auto(const json& v, const std::string& path) {
    if (!(v.is_string() && v.get<std::string>() == "auto")) return false;
    out_.auto_keys.push_back(path);
    return true;
  }
  std::int64_t whole(const json& v, const std::string& path, std::int64_t lo, std::int64_t hi = INT_MAX) const {
    const double x = v.is_number() ? v.get<double>() : NAN;
    if (!(x == std::floor(x))) fail(path, "must be a whole number, got " + v.dump());
    if (x < static_cast<double>(lo) || x > static_cast<double>(hi))
      fail(path, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + v.dump());
    return static_cast<std::int64_t>(x);
  }
  // A finite number >= lo (> lo when open), below hi.
  double real(const json& v, const std::string& path, double lo, bool open = false, double hi = HUGE_VAL) const {
    const double x = v.is_number() ? v.get<double>() : NAN;
    if (!std::isfinite(x)) fail(path, "must be a finite number, got " + v.dump());
    if (open ? !(x > lo) : !(x >= lo)) fail(path, std::string("must be ") + (open ? "above " : "at least ") + std::to_string(lo) + ", got " + v.dump());
    if (!(x < hi)) fail(path, "must be below " + std::to_string(hi) + ", got " + v.dump());
    return x;
  }
  bool flag(const json& v, const std::string& path) const {
    if (!v.is_boolean()) fail(path, "must be true or false, got " + v.dump());
    return v.get<bool>();
  }
  std::string text(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "must be a string, got " + v.dump());
    return v.get<std::string>();
  }
  // Hands each key of object `j` to take(key, value, path); keys it declines are ignored (and listed).
  template <class F>
  void each(const json& j, const std::string& prefix, F take) {
    if (!j.is_object()) fail(prefix, "must be a JSON object, got " + j.dump());
    for (auto& [k, v] : j.items()) {
      const std::string path = prefix.empty() ? k : prefix + "." + k;
      if (!take(k, v, path)) out_.ignored.push_back(path + ignored_reason(path));
    }
  }

 private:
  std::string origin_;
  DeepSpeedMapping& out_;
};

Partition level_of_group_size(const Topology& topo, int size, const std::string& origin) {
  int g = 1;
  for (Level l : kAllLevels) {
    g *= topo.fanout(l);
    if (g == size && topo.declares(l)) return l;
  }
  TZ_THROW(ConfigError, origin + ": 'zero_optimization.zero_hpz_partition_size' " + std::to_string(size) +
                            " is not the size of any group of the topology " + topo.to_string());
}

LrShape scheduler_shape(const std::string& type, const Reader& r) {
  if (type == "WarmupLR") return LrShape::ds_warmup;
  if (type == "WarmupDecayLR") return LrShape::ds_warmup_decay;
  if (type == "WarmupCosineLR") return LrShape::ds_warmup_cosine;
  r.fail("scheduler.type", "'" + type + "' is not implemented (WarmupLR, WarmupDecayLR and WarmupCosineLR are)");
}

// The scheduler section: its shape and params, DeepSpeed's defaults for the
// params it leaves out. Returns whether the peak rate is the optimizer's lr
// (WarmupCosineLR's always, WarmupLR's without warmup_max_lr).
bool read_scheduler(Reader& r, const json& v, TrainConfig& cfg, DeepSpeedMapping& out) {
  const json* type = v.is_object() && v.contains("type") ? &v.at("type") : nullptr;
  if (!type) r.fail("scheduler.type", "is missing");
  LrSchedule& s = cfg.schedule;
  const LrSchedule mine = s;  // what "auto" keeps
  s.shape = scheduler_shape(r.text(*type, "scheduler.type"), r);
  const bool cosine = s.shape == LrShape::ds_warmup_cosine;
  bool peak_from_optimizer = s.shape != LrShape::ds_warmup_decay;
  s.warmup = kWarmupSteps, s.total = 0, s.log_warmup = true, s.warmup_min_lr = 0, s.warmup_min_ratio = 0, s.cos_min_ratio = 1e-4f;
  if (!peak_from_optimizer) s.lr = kWarmupMaxLr;
  r.each(v, "scheduler", [&](const std::string& k, const json& sv, const std::string& path) {
    if (k == "type") return true;
    if (k != "params") return false;
    r.each(sv, path, [&](const std::string& pk, const json& pv, const std::string& ppath) {
      if (pk == "warmup_max_lr" && !cosine) peak_from_optimizer = false;
      if (r.is_auto(pv, ppath)) {  // Hugging Face fills these from its training arguments: here, tierzero's
        if (pk == "warmup_num_steps") s.warmup = mine.warmup;
        else if (pk == "warmup_max_lr") s.lr = mine.lr;
        return true;
      }
      if (pk == "warmup_num_steps") s.warmup = r.whole(pv, ppath, 0, LLONG_MAX);
      else if (pk == "total_num_steps" && s.shape != LrShape::ds_warmup) out.total_num_steps = s.total = r.whole(pv, ppath, 1, LLONG_MAX);
      else if (pk == "warmup_type") {
        const std::string t = r.text(pv, ppath);
        if (t != "log" && t != "linear") r.fail(ppath, "must be \"log\" or \"linear\", got \"" + t + "\"");
        s.log_warmup = t == "log";
      } else if (pk == "warmup_min_lr" && !cosine) s.warmup_min_lr = static_cast<float>(r.real(pv, ppath, 0));
      else if (pk == "warmup_max_lr" && !cosine) s.lr = static_cast<float>(r.real(pv, ppath, 0, true));
      else if (pk == "warmup_min_ratio" && cosine) s.warmup_min_ratio = static_cast<float>(r.real(pv, ppath, 0, false, 1.0 + 1e-9));
      else if (pk == "cos_min_ratio" && cosine) s.cos_min_ratio = static_cast<float>(r.real(pv, ppath, 0, false, 1.0 + 1e-9));
      else return false;
      return true;
    });
    return true;
  });
  if (out.total_num_steps) cfg.steps = *out.total_num_steps;  // the run's length, unless --steps says otherwise
  return peak_from_optimizer;
}

// The optimizer section's params; `peak_from_optimizer`: lr sets the peak rate.
void read_optimizer(Reader& r, const json& v, TrainConfig& cfg, bool peak_from_optimizer) {
  r.each(v, "optimizer", [&](const std::string& k, const json& ov, const std::string& path) {
    if (k == "type") {
      const std::string t = r.text(ov, path);  // DeepSpeed's Adam is AdamW unless adam_w_mode is false
      if (t != "AdamW" && t != "Adam") r.fail(path, "'" + t + "' is not supported (AdamW, Adam)");
      return true;
    }
    if (k != "params") return false;
    r.each(ov, path, [&](const std::string& pk, const json& pv, const std::string& ppath) {
      if (r.is_auto(pv, ppath)) return true;
      // A key whose only implemented value is DeepSpeed's default.
      const auto only = [&](bool want, const char* why) {
        if (r.flag(pv, ppath) != want) r.fail(ppath, std::string(want ? "false" : "true") + " is not supported: " + why);
      };
      if (pk == "lr" && peak_from_optimizer) cfg.schedule.lr = static_cast<float>(r.real(pv, ppath, 0, true));
      else if (pk == "lr") r.real(pv, ppath, 0, true);  // WarmupDecayLR and WarmupLR's warmup_max_lr set the rate
      else if (pk == "eps") cfg.adamw.eps = static_cast<float>(r.real(pv, ppath, 0, true));
      else if (pk == "weight_decay") cfg.adamw.weight_decay = static_cast<float>(r.real(pv, ppath, 0));
      else if (pk == "betas") {
        if (!pv.is_array() || pv.size() != 2) r.fail(ppath, "must be a list of two numbers, got " + pv.dump());
        cfg.adamw.beta1 = static_cast<float>(r.real(pv[0], ppath + "[0]", 0, false, 1));
        cfg.adamw.beta2 = static_cast<float>(r.real(pv[1], ppath + "[1]", 0, false, 1));
      } else if (pk == "torch_adam") r.flag(pv, ppath);  // the same AdamW (its weight-decay default: apply_defaults)
      else if (pk == "adam_w_mode") only(true, "Adam with L2 regularisation; tierzero's optimizer is AdamW");
      else if (pk == "bias_correction") only(true, "the moments are always bias-corrected");
      else if (pk == "amsgrad") only(false, "AMSGrad is not implemented");
      else return false;
      return true;
    });
    return true;
  });
}

// bf16 / fp16: enabled, and fp16's dynamic loss scaling.
void read_precision(Reader& r, const std::string& k, const json& v, TrainConfig& cfg, bool& enabled) {
  r.each(v, k, [&](const std::string& fk, const json& fv, const std::string& path) {
    if (fk == "enabled") {
      enabled = !r.is_auto(fv, path) && r.flag(fv, path);
      if (enabled) cfg.param_dtype = k == "bf16" ? DType::bf16 : DType::f16;
    } else if (k == "fp16" && fk == "initial_scale_power") {
      cfg.loss_scale_power = static_cast<int>(r.whole(fv, path, 0, 64));
    } else if (k == "fp16" && fk == "loss_scale_window") {
      cfg.loss_scale_window = static_cast<int>(r.whole(fv, path, 1));
    } else if (k == "fp16" && fk == "loss_scale") {
      if (r.real(fv, path, 0) != 0) r.fail(path, "a static loss scale is not supported (0: dynamic scaling)");
    } else {
      return false;
    }
    return true;
  });
}
// zero_optimization.offload_optimizer and offload_param: device (none,
// cpu, nvme), nvme_path (needed for nvme), buffer_count (at least 2),
// pin_memory (a flag: host buffers are plain on the CPU backend, where
// nothing is copied to a device); the rest is listed as ignored.
void read_offload(Reader& r, const json& v, const std::string& path, OffloadPlacement& out) {
  r.each(v, path, [&](const std::string& k, const json& x, const std::string& p) {
    if (k == "device") {
      if (!x.is_string()) r.fail(p, "must be \"none\", \"cpu\" or \"nvme\", got " + x.dump());
      const std::string d = x.get<std::string>();
      if (d != "none" && d != "cpu" && d != "nvme") r.fail(p, "must be \"none\", \"cpu\" or \"nvme\", got " + x.dump());
      out.device = parse_offload(d);
    } else if (k == "nvme_path") {
      if (!x.is_string() || x.get<std::string>().empty()) r.fail(p, "must be a directory, got " + x.dump());
      out.nvme_path = x.get<std::string>();
    } else if (k == "buffer_count") {
      out.buffers = static_cast<int>(r.whole(x, p, 2, 64));
    } else if (k == "pin_memory") {
      r.flag(x, p);
    } else {
      return false;
    }
    return true;
  });
  if (out.device == Offload::nvme && out.nvme_path.empty()) r.fail(path + ".nvme_path", "is needed with device \"nvme\"");
}

// A monitor section (tensorboard, csv_monitor): its folder when enabled,
// output_path/job_name as DeepSpeed's monitors join them, else "".
std::string read_monitor(Reader& r, const json& v, const std::string& path) {
  bool enabled = false;
  std::string output_path, job_name = "DeepSpeedJobName";  // DeepSpeed's defaults (deepspeed/monitor/config.py)
  r.each(v, path, [&](const std::string& k, const json& x, const std::string& p) {
    if (k == "enabled") enabled = r.flag(x, p);
    else if (k == "output_path") output_path = r.text(x, p);
    else if (k == "job_name") job_name = r.text(x, p);
    else return false;
    return true;
  });
  if (!enabled) return "";
  if (job_name.empty() || job_name.find('/') != std::string::npos) r.fail(path + ".job_name", "must be a folder name, got \"" + job_name + "\"");
  if (output_path.empty()) return job_name;
  return output_path.back() == '/' ? output_path + job_name : output_path + "/" + job_name;
}

json parse_root(const std::string& text, const std::string& origin) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    TZ_THROW(ConfigError, origin + ": not valid JSON (" + e.what() + ")");
  }
  TZ_CHECK(root.is_object(), ConfigError, origin + ": the top level must be a JSON object");
  return root;
}

// The value at a dotted path, or null when a part of it is absent.
const json& at_path(const json& root, std::string_view path) {
  static const json kNull;
  const json* j = &root;
  while (!path.empty()) {
    const std::size_t dot = path.find('.');
    const std::string key(path.substr(0, dot));
    if (!j->is_object() || !j->contains(key)) return kNull;
    j = &j->at(key);
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return *j;
}
bool is_auto(const json& v) { return v.is_string() && v.get<std::string>() == "auto"; }
}  // namespace

DeepSpeedConfig::DeepSpeedConfig(std::string text, std::string origin) : text_(std::move(text)), origin_(std::move(origin)) {
  parse_root(text_, origin_);
}

DeepSpeedConfig DeepSpeedConfig::read(const std::string& path) {
  auto text = read_file(path);
  TZ_CHECK(text, ConfigError, "cannot read DeepSpeed config '" + path + "'");
  return DeepSpeedConfig(std::move(*text), path);
}

void DeepSpeedConfig::apply_defaults(TrainConfig& cfg) const {
  const json root = parse_root(text_, origin_);
  const auto absent = [&](std::string_view path) { return at_path(root, path).is_null(); };
  if (absent("gradient_clipping")) cfg.grad_clip = 0;
  if (absent("gradient_accumulation_steps")) cfg.grad_accum = 1;
  // fp32 parameters unless bf16 or fp16 is enabled (apply) or left to tierzero ("auto").
  if (!is_auto(at_path(root, "bf16.enabled")) && !is_auto(at_path(root, "fp16.enabled"))) cfg.param_dtype = DType::f32;
  // The optimizer's (FusedAdam's) defaults; without an optimizer section, the script's optimizer is tierzero's AdamW at its lr.
  if (!absent("optimizer") && absent("optimizer.params.lr")) cfg.schedule.lr = kAdamLr;
  if (absent("optimizer.params.betas")) cfg.adamw.beta1 = kAdamBeta1, cfg.adamw.beta2 = kAdamBeta2;
  if (absent("optimizer.params.eps")) cfg.adamw.eps = kAdamEps;
  if (absent("optimizer.params.weight_decay")) cfg.adamw.weight_decay = at_path(root, "optimizer.params.torch_adam") == true ? kTorchAdamWDecay : 0.0f;
  // No scheduler: a constant rate (tierzero's shape with no warmup and no decay).
  if (absent("scheduler")) cfg.schedule.shape = LrShape::warmup_cosine, cfg.schedule.warmup = 0, cfg.schedule.min_lr_ratio = 1;
}

// tensor_parallel.autotp_size, checked; 1 when absent.
int autotp_size(const json& root, const Reader& r) {
  const json& v = at_path(root, "tensor_parallel.autotp_size");
  return v.is_null() ? 1 : static_cast<int>(r.whole(v, "tensor_parallel.autotp_size", 1, 1 << 20));
}

int DeepSpeedConfig::tensor_parallel_size() const {
  DeepSpeedMapping unused;
  return autotp_size(parse_root(text_, origin_), Reader(origin_, unused));
}

DeepSpeedMapping DeepSpeedConfig::apply(const Topology& topo, TrainConfig& cfg) const {
  const json root = parse_root(text_, origin_);
  DeepSpeedMapping out;
  Reader r(origin_, out);
  int stage = 0, hpz = 1;
  bool qwz = false, qgz = false, bf16 = false, fp16 = false;
  std::int64_t reduce_bucket = 0;  // elements; 0: tierzero's bucket
  std::optional<std::int64_t> persist = kDeepSpeedPersistenceThreshold;  // stage3_param_persistence_threshold; "auto": tierzero's
  OffloadPlacement optim_offload{Offload::none, "", kOptimizerBuffers}, param_offload{Offload::none, "", kParamBuffers};
  // First: the scheduler decides which lr key sets the peak.
  const bool peak_from_optimizer = !root.contains("scheduler") || read_scheduler(r, root.at("scheduler"), cfg, out);
  r.each(root, "", [&](const std::string& k, const json& v, const std::string& path) {
    if (k == "scheduler") return true;
    if (k == "zero_optimization") {
      r.each(v, path, [&](const std::string& zk, const json& zv, const std::string& zpath) {
        if (zk == "stage") stage = static_cast<int>(r.whole(zv, zpath, 0, 3));
        else if (zk == "zero_hpz_partition_size") hpz = static_cast<int>(r.whole(zv, zpath, 1));
        else if (zk == "zero_quantized_weights") qwz = r.flag(zv, zpath);
        else if (zk == "zero_quantized_gradients") qgz = r.flag(zv, zpath);
        else if (zk == "reduce_bucket_size") reduce_bucket = r.whole(zv, zpath, 1, LLONG_MAX);
        else if (zk == "overlap_comm" && r.flag(zv, zpath)) {}  // what tierzero always does
        else if (zk == "offload_optimizer") read_offload(r, zv, zpath, optim_offload);
        else if (zk == "offload_param") read_offload(r, zv, zpath, param_offload);
        else if (zk == "stage3_param_persistence_threshold") persist = r.is_auto(zv, zpath) ? std::nullopt : std::optional(r.whole(zv, zpath, 0, LLONG_MAX));
        else return false;  // other buckets and thresholds: tierzero's own (listed as ignored, with the reason)
        return true;
      });
    } else if (r.is_auto(v, path)) {
      // train_batch_size, micro batch, accumulation, clipping: tierzero's values
    } else if (k == "train_micro_batch_size_per_gpu") {
      cfg.micro_batch = static_cast<int>(*(out.micro_batch = r.whole(v, path, 1)));
    } else if (k == "gradient_accumulation_steps") {
      cfg.grad_accum = static_cast<int>(*(out.grad_accum = r.whole(v, path, 1)));
    } else if (k == "train_batch_size") {
      out.train_batch_size = r.whole(v, path, 1, LLONG_MAX);
    } else if (k == "gradient_clipping") {
      cfg.grad_clip = static_cast<float>(r.real(v, path, 0));
    } else if (k == "bf16" || k == "fp16") {
      read_precision(r, k, v, cfg, k == "bf16" ? bf16 : fp16);
    } else if (k == "optimizer") {
      read_optimizer(r, v, cfg, peak_from_optimizer);
    } else if (k == "wall_clock_breakdown") {
      cfg.breakdown = r.flag(v, path);
    } else if (k == "tensorboard") {
      out.tensorboard_dir = read_monitor(r, v, path);
    } else if (k == "csv_monitor") {
      out.csv_monitor_dir = read_monitor(r, v, path);
    } else if (k == "tensor_parallel") {  // the degree: tensor_parallel_size(), read before the plan's topology is known
      r.each(v, path, [&](const std::string& tk, const json&, const std::string&) { return tk == "autotp_size"; });
      autotp_size(root, r);
    } else {
      return false;
    }
    return true;
  });
  if (bf16 && fp16) r.fail("bf16.enabled", "and 'fp16.enabled' are both true; enable one");
  if (stage < 3) {
    for (auto [on, key] : {std::pair{qwz, "zero_quantized_weights"}, std::pair{qgz, "zero_quantized_gradients"},
                           std::pair{hpz > 1, "zero_hpz_partition_size"}})
      if (on) r.fail(std::string("zero_optimization.") + key, "is a ZeRO++ setting and needs stage 3, but stage is " + std::to_string(stage));
    if (param_offload.offloaded())
      r.fail("zero_optimization.offload_param.device", "offloads partitioned parameters and needs stage 3, but stage is " + std::to_string(stage));
  }
  static const char* kStages[] = {"ddp", "zero1", "zero2", "zero3"};
  const bool zeropp = stage == 3 && (hpz > 1 || qwz || qgz);
  Plan p = strategy_plan(zeropp ? "zeropp" : kStages[stage]);
  if (zeropp) {
    p.bwd_params = hpz > 1 ? level_of_group_size(topo, hpz, origin_) : p.params;
    if (!qwz) p.weight_bits = 16;
    if (!qgz) p.grad_bits = HopBits{};
  }
  // reduce_bucket_size counts gradient elements; tierzero's bucket counts their bytes on the wire (the
  // parameter dtype). ZeRO-1 keeps its one bucket (the whole gradient, reduced after backward).
  if (reduce_bucket > 0 && p.bucket_bytes != ~std::size_t{0}) p.bucket_bytes = static_cast<std::size_t>(reduce_bucket) * dtype_size(cfg.param_dtype);
  p.optim_offload = optim_offload, p.param_offload = param_offload;
  if (persist && stage == 3) p.persist_threshold = static_cast<std::size_t>(*persist);
  out.plan = fit_to(p, topo);
  return out;
}

DeepSpeedMapping parse_deepspeed_config(const std::string& text, const std::string& origin, const Topology& topo, TrainConfig& cfg) {
  const DeepSpeedConfig ds(text, origin);
  ds.apply_defaults(cfg);
  return ds.apply(topo, cfg);
}

std::vector<std::string> finish_deepspeed_run(const DeepSpeedMapping& ds, const std::string& origin, TrainConfig& cfg, int data_ranks) {
  // DeepSpeed's batch rule (deepspeed/runtime/config.py, _set_batch_related_parameters), with floor division as there.
  const auto tbs = ds.train_batch_size, world = std::optional<std::int64_t>(data_ranks);
  std::optional<std::int64_t> micro = ds.micro_batch, accum = ds.grad_accum;
  if (tbs && micro && !accum) accum = *tbs / *micro / *world;
  else if (tbs && accum && !micro) micro = *tbs / *world / *accum;
  else if (tbs && !micro && !accum) accum = 1, micro = *tbs / *world;
  else if (micro && !accum) accum = 1;
  if (micro || tbs) {
    TZ_CHECK(*micro >= 1 && *accum >= 1, ConfigError,
             origin + ": 'train_batch_size' " + std::to_string(*tbs) + " leaves no whole micro batch and accumulation on " +
                 std::to_string(data_ranks) + " ranks");
    TZ_CHECK(*micro <= INT_MAX && *accum <= INT_MAX, ConfigError, origin + ": the micro batch or accumulation is too large");
    cfg.micro_batch = static_cast<int>(*micro), cfg.grad_accum = static_cast<int>(*accum);
  }
  std::int64_t have = 0;  // micro batch x accumulation (each below 2^31) x ranks may pass 2^63
  const bool fits = !__builtin_mul_overflow(std::int64_t{cfg.micro_batch} * cfg.grad_accum, std::int64_t{data_ranks}, &have);
  TZ_CHECK(!tbs || (fits && *tbs == have), ConfigError,
           origin + ": 'train_batch_size' is " + std::to_string(*tbs) + " but micro batch " + std::to_string(cfg.micro_batch) +
               " x accumulation " + std::to_string(cfg.grad_accum) + " x " + std::to_string(data_ranks) + " ranks is " +
               (fits ? std::to_string(have) : "over 2^63"));
  std::vector<std::string> notes;
  const LrSchedule& s = cfg.schedule;
  char line[512];
  std::snprintf(line, sizeof line, "DeepSpeed config: %lld steps%s, micro batch %d x accumulation %d x %d ranks, AdamW peak lr %g betas (%g, %g) "
                "eps %g weight decay %g, gradient clipping %s, %s parameters",
                static_cast<long long>(cfg.steps), ds.total_num_steps && *ds.total_num_steps == cfg.steps ? " (scheduler.params.total_num_steps)" : "",
                cfg.micro_batch, cfg.grad_accum, data_ranks, s.lr, cfg.adamw.beta1, cfg.adamw.beta2, cfg.adamw.eps, cfg.adamw.weight_decay,
                cfg.grad_clip > 0 ? std::to_string(cfg.grad_clip).c_str() : "off", std::string(dtype_name(cfg.param_dtype)).c_str());
  notes.emplace_back(line);
  const bool deepspeed_shape = s.shape != LrShape::warmup_cosine;
  if (deepspeed_shape && s.warmup > cfg.steps)
    notes.push_back("warning: " + origin + ": 'scheduler.params.warmup_num_steps' " + std::to_string(s.warmup) + " is longer than the run (" +
                    std::to_string(cfg.steps) + " steps): the learning rate never reaches its peak");
  if (deepspeed_shape && ds.total_num_steps && *ds.total_num_steps < s.warmup)
    notes.push_back("warning: " + origin + ": 'scheduler.params.total_num_steps' " + std::to_string(*ds.total_num_steps) +
                    " is less than warmup_num_steps " + std::to_string(s.warmup));
  if (ds.total_num_steps && *ds.total_num_steps != cfg.steps)
    notes.push_back("the schedule ends at scheduler.params.total_num_steps " + std::to_string(*ds.total_num_steps) + "; --steps runs " +
                    std::to_string(cfg.steps));
  return notes;
}

}  // namespace tierzero
