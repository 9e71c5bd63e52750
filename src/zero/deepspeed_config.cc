#include "tierzero/deepspeed_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tierzero/error.h"

namespace tierzero {

namespace {
using nlohmann::json;

// Walks `j`, handing known keys to `take` and recording the others.
template <class F>
void each_key(const json& j, const std::string& prefix, std::vector<std::string>& ignored, F take) {
  for (auto& [k, v] : j.items()) {
    const std::string path = prefix.empty() ? k : prefix + "." + k;
    if (!take(k, v, path)) ignored.push_back(path);
  }
}

double number(const json& v, const std::string& origin, const std::string& path) {
  TZ_CHECK(v.is_number(), ConfigError, origin + ": '" + path + "' must be a number");
  return v.get<double>();
}

bool flag(const json& v, const std::string& origin, const std::string& path) {
  TZ_CHECK(v.is_boolean(), ConfigError, origin + ": '" + path + "' must be true or false");
  return v.get<bool>();
}

Partition level_of_group_size(const Topology& topo, int size, const std::string& origin) {
  int g = 1;
  for (Level l : kAllLevels) {
    g *= topo.fanout(l);
    if (g == size && topo.declares(l)) return l;
  }
  TZ_THROW(ConfigError, origin + ": zero_optimization.zero_hpz_partition_size " + std::to_string(size) +
                            " is not the size of any group of the topology " + topo.to_string());
}
}  // namespace

DeepSpeedMapping parse_deepspeed_config(const std::string& text, const std::string& origin, const Topology& topo, TrainConfig& cfg) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    TZ_THROW(ConfigError, origin + ": not valid JSON (" + e.what() + ")");
  }
  TZ_CHECK(root.is_object(), ConfigError, origin + ": the top level must be a JSON object");
  DeepSpeedMapping out;
  int stage = 0, hpz = 1;
  bool qwz = false, qgz = false;
  each_key(root, "", out.ignored, [&](const std::string& k, const json& v, const std::string& path) {
    if (k == "zero_optimization") {
      each_key(v, path, out.ignored, [&](const std::string& zk, const json& zv, const std::string& zpath) {
        if (zk == "stage") stage = static_cast<int>(number(zv, origin, zpath));
        else if (zk == "zero_hpz_partition_size") hpz = static_cast<int>(number(zv, origin, zpath));
        else if (zk == "zero_quantized_weights") qwz = flag(zv, origin, zpath);
        else if (zk == "zero_quantized_gradients") qgz = flag(zv, origin, zpath);
        else return false;
        return true;
      });
    } else if (k == "train_micro_batch_size_per_gpu") {
      cfg.micro_batch = static_cast<int>(number(v, origin, path));
    } else if (k == "gradient_accumulation_steps") {
      cfg.grad_accum = static_cast<int>(number(v, origin, path));
    } else if (k == "gradient_clipping") {
      cfg.grad_clip = static_cast<float>(number(v, origin, path));
    } else if (k == "bf16" || k == "fp16") {
      each_key(v, path, out.ignored, [&](const std::string& fk, const json& fv, const std::string& fpath) {
        if (fk != "enabled") return false;
        if (flag(fv, origin, fpath)) cfg.param_dtype = k == "bf16" ? DType::bf16 : DType::f16;
        return true;
      });
    } else if (k == "optimizer") {
      each_key(v, path, out.ignored, [&](const std::string& ok, const json& ov, const std::string& opath) {
        if (ok == "type") {
          const std::string t = ov.is_string() ? ov.get<std::string>() : "";
          TZ_CHECK(t == "AdamW" || t == "Adam", ConfigError, origin + ": optimizer type '" + t + "' is not supported (AdamW)");
          return true;
        }
        if (ok != "params") return false;
        each_key(ov, opath, out.ignored, [&](const std::string& pk, const json& pv, const std::string& ppath) {
          if (pk == "lr") cfg.schedule.lr = static_cast<float>(number(pv, origin, ppath));
          else if (pk == "eps") cfg.adamw.eps = static_cast<float>(number(pv, origin, ppath));
          else if (pk == "weight_decay") cfg.adamw.weight_decay = static_cast<float>(number(pv, origin, ppath));
          else if (pk == "betas" && pv.is_array() && pv.size() == 2) {
            cfg.adamw.beta1 = static_cast<float>(number(pv[0], origin, ppath));
            cfg.adamw.beta2 = static_cast<float>(number(pv[1], origin, ppath));
          } else return false;
          return true;
        });
        return true;
      });
    } else if (k == "scheduler") {
      each_key(v, path, out.ignored, [&](const std::string& sk, const json& sv, const std::string& spath) {
        if (sk == "type") return true;  // warmup then decay: tierzero's schedule is warmup + cosine
        if (sk != "params") return false;
        each_key(sv, spath, out.ignored, [&](const std::string& pk, const json& pv, const std::string& ppath) {
          if (pk == "warmup_num_steps") cfg.schedule.warmup = static_cast<std::int64_t>(number(pv, origin, ppath));
          else if (pk == "warmup_max_lr") cfg.schedule.lr = static_cast<float>(number(pv, origin, ppath));
          else if (pk == "total_num_steps") cfg.schedule.total = static_cast<std::int64_t>(number(pv, origin, ppath));
          else return false;
          return true;
        });
        return true;
      });
    } else {
      return false;
    }
    return true;
  });
  TZ_CHECK(stage >= 0 && stage <= 3, ConfigError, origin + ": zero_optimization.stage must be 0 to 3");
  static const char* kStages[] = {"ddp", "zero1", "zero2", "zero3"};
  const bool zeropp = stage == 3 && (hpz > 1 || qwz || qgz);
  Plan p = strategy_plan(zeropp ? "zeropp" : kStages[stage]);
  if (zeropp) {
    p.bwd_params = hpz > 1 ? level_of_group_size(topo, hpz, origin) : p.params;
    if (!qwz) p.weight_bits = 16;
    if (!qgz) p.grad_bits = HopBits{};
  }
  out.plan = fit_to(p, topo);
  cfg.validate();
  return out;
}

DeepSpeedMapping read_deepspeed_config(const std::string& path, const Topology& topo, TrainConfig& cfg) {
  std::ifstream in(path);
  TZ_CHECK(in, ConfigError, "cannot read DeepSpeed config '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_deepspeed_config(ss.str(), path, topo, cfg);
}

}  // namespace tierzero
