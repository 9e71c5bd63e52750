#include "topo/device_toml.h"

#include "core/sourced_table.h"
#include "tierzero/error.h"

namespace tierzero {

const AttentionRate* DeviceSpec::attention_rate(const std::string& implementation) const {
  for (const AttentionRate& r : attention)
    if (r.implementation == implementation) return &r;
  return nullptr;
}

std::string DeviceSpec::source_of(const std::string& key) const { return tierzero::source_of(sources, key); }

namespace {
AttentionRate read_rate(const toml::table& t, const std::string& where) {
  SourcedTable r(t, where);
  AttentionRate a;
  r.text("implementation", a.implementation);
  TZ_CHECK(!a.implementation.empty() && a.implementation != "eager", ConfigError,
           where + ": needs implementation (a name other than eager, which is priced as GEMMs)");
  TZ_CHECK(t.contains("forward") && t.contains("backward") && t.contains("half_seq"), ConfigError,
           where + ": needs forward, backward and half_seq");
  r.number("forward", a.forward, 1e-6, 1);
  r.number("backward", a.backward, 1e-6, 1);
  r.number("half_seq", a.half_seq, 0, 1e9);
  r.number("small_head", a.small_head, 1e-6, 1);
  r.text("source", a.source);
  Sources ignored;
  r.finish(ignored);
  return a;
}
}  // namespace

void read_device_keys(const toml::table& root, System& s, const std::string& origin) {
  DeviceSpec& d = s.device;
  SourcedTable top(root, origin);
  top.number("memory_gb", s.memory_bytes, 1e-6, 1e9, 1e9);
  top.number("peak_tflops", s.peak_flops, 1e-9, 1e9, 1e12);
  top.number("memory_bandwidth_gbs", s.memory_bandwidth_Bps, 0, 1e9, 1e9);
  // Only these keys' sources: the caller checks the rest of the top level.
  for (const char* key : {"memory_gb", "peak_tflops", "memory_bandwidth_gbs"})
    if (const auto text = root[std::string(key) + "_source"].value<std::string>()) set_source(d.sources, key, *text);
  if (!root.contains("device")) return;
  const toml::table* t = root["device"].as_table();
  TZ_CHECK(t, ConfigError, origin + ": [device] must be a table");
  read_device_table(*t, d, origin + ": [device]");
}

void read_device_table(const toml::table& t, DeviceSpec& d, const std::string& where) {
  SourcedTable dev(t, where);
  dev.integer("sm_count", d.sm_count, 0, 1 << 20);
  dev.number("gemm_efficiency", d.gemm_efficiency, 1e-3, 1);
  dev.number("short_k", d.short_k, 0, 1e6);
  dev.number("peak_fp8_tflops", d.peak_fp8_flops, 0, 1e9, 1e12);
  dev.number("gemm_fp8_efficiency", d.gemm_fp8_efficiency, 0, 1);
  dev.number("memory_efficiency", d.memory_efficiency, 1e-3, 1);
  dev.number("launch_us", d.launch_s, 0, 1e6, 1e-6);
  dev.number("runtime_gb", d.runtime_bytes, 0, 1e6, 1e9);
  TZ_CHECK(d.peak_fp8_flops == 0 || d.gemm_fp8_efficiency > 0, ConfigError, where + ": peak_fp8_tflops needs gemm_fp8_efficiency");
  if (dev.take("attention")) {
    const toml::array* rates = t["attention"].as_array();
    TZ_CHECK(rates, ConfigError, where + ": attention must be an array of [[device.attention]] tables");
    d.attention.clear();  // the file's list replaces a based_on device's
    for (std::size_t i = 0; i < rates->size(); ++i) {
      const std::string w = where + ".attention[" + std::to_string(i) + "]";
      const toml::table* r = (*rates)[i].as_table();
      TZ_CHECK(r, ConfigError, w + " must be a table");
      AttentionRate a = read_rate(*r, w);
      TZ_CHECK(!d.attention_rate(a.implementation), ConfigError, w + ": implementation '" + a.implementation + "' listed twice");
      d.attention.push_back(std::move(a));
    }
  }
  dev.finish(d.sources);
}

const std::vector<std::string>& device_top_keys() {
  static const std::vector<std::string> keys = {"memory_gb", "memory_gb_source", "peak_tflops", "peak_tflops_source",
                                                "memory_bandwidth_gbs", "memory_bandwidth_gbs_source", "device"};
  return keys;
}

void write_device_keys(toml::table& root, const System& s) {
  const DeviceSpec& d = s.device;
  auto put = [&d](toml::table& t, const std::string& key, auto v) {
    t.insert(key, v);
    if (const std::string src = d.source_of(key); !src.empty()) t.insert(key + "_source", src);
  };
  put(root, "memory_gb", s.memory_bytes / 1e9);
  put(root, "peak_tflops", s.peak_flops / 1e12);
  put(root, "memory_bandwidth_gbs", s.memory_bandwidth_Bps / 1e9);
  toml::table t;
  put(t, "sm_count", static_cast<std::int64_t>(d.sm_count));
  put(t, "gemm_efficiency", d.gemm_efficiency);
  put(t, "short_k", d.short_k);
  if (d.peak_fp8_flops > 0) put(t, "peak_fp8_tflops", d.peak_fp8_flops / 1e12), put(t, "gemm_fp8_efficiency", d.gemm_fp8_efficiency);
  put(t, "memory_efficiency", d.memory_efficiency);
  put(t, "launch_us", d.launch_s / 1e-6);
  if (d.runtime_bytes > 0) put(t, "runtime_gb", d.runtime_bytes / 1e9);
  toml::array rates;
  for (const AttentionRate& a : d.attention) {
    toml::table r;
    r.insert("implementation", a.implementation);
    r.insert("forward", a.forward);
    r.insert("backward", a.backward);
    r.insert("half_seq", a.half_seq);
    r.insert("small_head", a.small_head);
    if (!a.source.empty()) r.insert("source", a.source);
    rates.push_back(std::move(r));
  }
  if (!rates.empty()) t.insert("attention", std::move(rates));
  root.insert("device", std::move(t));
}

}  // namespace tierzero
