#include "tierzero/train_config.h"

#include <cmath>
#include <limits>
#include <toml++/toml.h>

#include "core/read_file.h"
#include "core/toml_read.h"
#include "model/model_file.h"
#include "tierzero/error.h"

namespace tierzero {

void TrainConfig::validate() const {
  model.validate();
  auto check = [](bool ok, const std::string& msg) { TZ_CHECK(ok, ConfigError, msg); };
  check(steps >= 1, "steps must be at least 1");
  check(micro_batch >= 1, "micro_batch must be at least 1");
  check(grad_accum >= 1, "grad_accum must be at least 1");
  check(seq_len >= 0 && seq_len <= model.context,
        "seq_len must be between 1 and the model's context (" + std::to_string(model.context) + "), got " + std::to_string(seq_len));
  // Written so that NaN fails every check; infinities are refused by name.
  auto finite = [](float v) { return std::isfinite(v); };
  auto shown = [](float v) { return " (got " + std::to_string(v) + ")"; };
  check(finite(schedule.lr) && schedule.lr > 0, "lr must be a positive finite number" + shown(schedule.lr));
  check(schedule.min_lr_ratio >= 0 && schedule.min_lr_ratio <= 1, "min_lr_ratio must be in [0, 1]" + shown(schedule.min_lr_ratio));
  check(schedule.warmup >= 0, "warmup must be >= 0");
  check(adamw.beta1 >= 0 && adamw.beta1 < 1 && adamw.beta2 >= 0 && adamw.beta2 < 1, "beta1 and beta2 must be in [0, 1)");
  check(finite(adamw.eps) && adamw.eps > 0, "eps must be a positive finite number" + shown(adamw.eps));
  check(finite(adamw.weight_decay) && adamw.weight_decay >= 0, "weight_decay must be a finite number >= 0" + shown(adamw.weight_decay));
  check(finite(grad_clip) && grad_clip >= 0, "grad_clip must be a finite number >= 0 (0: no clipping)" + shown(grad_clip));
  check(is_float(param_dtype), "param_dtype must be fp32, bf16 or fp16");
  check(log_every >= 1, "log_every must be at least 1");
  check(comm_queues == 1 || comm_queues == 2, "comm_queues must be 1 or 2");
  check(loss_scale_power >= 0 && loss_scale_power <= 64, "loss_scale_power must be in [0, 64]");
  check(loss_scale_window >= 1, "loss_scale_window must be at least 1");
  check(val_fraction >= 0 && val_fraction <= 0.5, "val_fraction must be in [0, 0.5]");
  check(val_data.empty() || val_fraction == 0, "give val_data or val_fraction, not both");
  check(eval_every >= 0, "eval_every must be >= 0");
  check(eval_batches >= 1, "eval_batches must be at least 1");
}

namespace {
void read_model(const toml::node& n, const std::string& origin, GptConfig& m) {
  if (n.is_string()) {
    m = load_model(*n.value<std::string>());
    return;
  }
  const toml::table* t = n.as_table();
  TZ_CHECK(t, ConfigError, origin + ": key 'model' must be a preset name, a model file or a table");
  read_model_table(*t, origin, "model.", m);
}
}  // namespace

void parse_train_config(const std::string& text, const std::string& origin, TrainConfig& c) {
  const toml::table root = parse_toml(text, origin);
  for (auto&& [k, v] : root) {
    const std::string key(k.str());
    // A value parsed by name (a dtype, a matmul type), its error naming the file and key.
    auto named = [&key, &origin, &value = v](auto parse) {
      try {
        return parse(get<std::string>(value, key, origin));
      } catch (const ConfigError& e) {
        TZ_THROW(ConfigError, origin + ": key '" + key + "': " + e.message());
      }
    };
    if (key == "model") read_model(v, origin, c.model);
    else if (key == "data") c.data = get<std::string>(v, key, origin);
    else if (key == "steps") c.steps = get_int(v, key, origin, 1, std::numeric_limits<std::int64_t>::max());
    else if (key == "micro_batch") c.micro_batch = static_cast<int>(get_int(v, key, origin, 1));
    else if (key == "grad_accum") c.grad_accum = static_cast<int>(get_int(v, key, origin, 1));
    else if (key == "seq_len") c.seq_len = static_cast<int>(get_int(v, key, origin, 0));
    else if (key == "seed") c.seed = static_cast<std::uint64_t>(get_int(v, key, origin, 0, std::numeric_limits<std::int64_t>::max()));
    else if (key == "lr") c.schedule.lr = static_cast<float>(get<double>(v, key, origin));
    else if (key == "min_lr_ratio") c.schedule.min_lr_ratio = static_cast<float>(get<double>(v, key, origin));
    else if (key == "warmup") c.schedule.warmup = get_int(v, key, origin, 0, std::numeric_limits<std::int64_t>::max());
    else if (key == "beta1") c.adamw.beta1 = static_cast<float>(get<double>(v, key, origin));
    else if (key == "beta2") c.adamw.beta2 = static_cast<float>(get<double>(v, key, origin));
    else if (key == "eps") c.adamw.eps = static_cast<float>(get<double>(v, key, origin));
    else if (key == "weight_decay") c.adamw.weight_decay = static_cast<float>(get<double>(v, key, origin));
    else if (key == "grad_clip") c.grad_clip = static_cast<float>(get<double>(v, key, origin));
    else if (key == "param_dtype") c.param_dtype = named(parse_dtype);
    else if (key == "recompute") c.recompute = get<bool>(v, key, origin);
    else if (key == "breakdown") c.breakdown = get<bool>(v, key, origin);
    else if (key == "comm_queues") c.comm_queues = static_cast<int>(get_int(v, key, origin, 1, 2));
    else if (key == "matmul") c.matmul = named(parse_matmul_type);
    else if (key == "metrics") c.metrics = get<std::string>(v, key, origin);
    else if (key == "log_every") c.log_every = static_cast<int>(get_int(v, key, origin, 1));
    else if (key == "val_data") c.val_data = get<std::string>(v, key, origin);
    else if (key == "val_fraction") c.val_fraction = get<double>(v, key, origin);
    else if (key == "eval_every") c.eval_every = static_cast<int>(get_int(v, key, origin, 0));
    else if (key == "eval_batches") c.eval_batches = static_cast<int>(get_int(v, key, origin, 1));
    else if (key == "loss_scale_power") c.loss_scale_power = static_cast<int>(get_int(v, key, origin, 0, 64));
    else if (key == "loss_scale_window") c.loss_scale_window = static_cast<int>(get_int(v, key, origin, 1));
    else if (key == "plan") TZ_CHECK(v.is_table(), ConfigError, origin + ": key 'plan' must be a table");  // the plan layer's (read_config_plan)
    else TZ_THROW(ConfigError, origin + ": unknown key '" + key + "'");
  }
  try {
    c.validate();
  } catch (const ConfigError& e) {
    TZ_THROW(ConfigError, origin + ": " + e.message());
  }
}

void load_train_config(const std::string& path, TrainConfig& c) {
  const auto text = read_file(path);
  TZ_CHECK(text, ConfigError, "cannot read config file '" + path + "'");
  parse_train_config(*text, path, c);
}

}  // namespace tierzero
