#include "tierzero/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <utility>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ckpt/page_buffer.h"
#include "tierzero/error.h"
#include "model/model_file.h"

namespace tierzero {

namespace fs = std::filesystem;
using nlohmann::json;

std::string step_dir_name(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

std::string rank_file_name(int rank, const char* kind) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "rank-%05d.%s", rank, kind);
  return buf;
}

std::uint32_t crc32_of(const void* data, std::size_t bytes, std::uint32_t previous) {
  uLong crc = previous;
  const auto* p = static_cast<const Bytef*>(data);
  while (bytes > 0) {
    const uInt chunk = static_cast<uInt>(std::min<std::size_t>(bytes, 1u << 30));
    crc = crc32(crc, p, chunk);
    p += chunk, bytes -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

namespace {
// Clears O_DIRECT on `fd`: the rest of the file goes through the page cache.
void stop_direct(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_DIRECT); }
}  // namespace

void write_file_synced(const std::string& path, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  // Page-aligned data of a page or more bypasses the page cache (O_DIRECT) up to its last whole page; the tail,
  // unaligned data, and filesystems that refuse O_DIRECT (tmpfs) take the ordinary path.
  bool direct = reinterpret_cast<std::uintptr_t>(p) % kPageAlign == 0 && bytes >= kPageAlign;
  int fd = direct ? ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644) : -1;
  if (fd < 0) {
    direct = false;
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  TZ_CHECK(fd >= 0, FormatError, "cannot write '" + path + "': " + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes) {
    if (direct && (bytes - done < kPageAlign || done % kPageAlign != 0)) stop_direct(fd), direct = false;
    const std::size_t chunk = direct ? (bytes - done) / kPageAlign * kPageAlign : bytes - done;
    const ssize_t n = ::write(fd, p + done, chunk);
    if (n < 0 && direct && errno == EINVAL) {  // the device wants another alignment: write it the ordinary way
      stop_direct(fd), direct = false;
      continue;
    }
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      TZ_THROW(FormatError, "cannot write '" + path + "': " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  TZ_CHECK(ok, FormatError, "cannot sync '" + path + "': " + std::strerror(errno));
}

namespace {
json plan_json(const Plan& p) {
  return {{"name", p.name},
          {"params", partition_name(p.params)},
          {"bwd_params", partition_name(p.bwd_params)},
          {"grads", partition_name(p.grads)},
          {"optim", partition_name(p.optim)},
          {"weight_bits", p.weight_bits},
          {"grad_bits", p.grad_bits.to_string()},
          {"gather", std::string(decomposition_name(p.gather))},
          {"reduce", std::string(decomposition_name(p.reduce))},
          {"quant_block", p.quant_block},
          {"bucket_bytes", p.bucket_bytes},
          {"prefetch", p.prefetch},
          {"persist_threshold", p.persist_threshold},
          {"hop_chunk_bytes", p.hop_chunk_bytes}};
}

// A whole-number field that fits T, or a finite one that fits a float:
// anything else (a fraction, 1e90, a string) is an error naming the key,
// not an out-of-range conversion.
template <class T>
T whole(const json& j, const char* key) {
  const json& v = j.at(key);
  const bool ok = v.is_number_unsigned()  ? std::in_range<T>(v.get<std::uint64_t>())
                  : v.is_number_integer() ? std::in_range<T>(v.get<std::int64_t>())
                                          : false;
  TZ_CHECK(ok, ConfigError, std::string("'") + key + "' must be a whole number in range, got " + v.dump());
  return v.is_number_unsigned() ? static_cast<T>(v.get<std::uint64_t>()) : static_cast<T>(v.get<std::int64_t>());
}
float real(const json& j, const char* key) {
  const json& v = j.at(key);
  const double x = v.is_number() ? v.get<double>() : NAN;
  TZ_CHECK(std::isfinite(x) && std::abs(x) <= FLT_MAX, ConfigError, std::string("'") + key + "' must be a finite number, got " + v.dump());
  return static_cast<float>(x);
}

Plan plan_from(const json& j) {
  Plan p;
  p.name = j.at("name").get<std::string>();
  p.params = parse_partition(j.at("params").get<std::string>());
  p.bwd_params = parse_partition(j.at("bwd_params").get<std::string>());
  p.grads = parse_partition(j.at("grads").get<std::string>());
  p.optim = parse_partition(j.at("optim").get<std::string>());
  p.weight_bits = whole<int>(j, "weight_bits");
  p.grad_bits = parse_hop_bits(j.at("grad_bits").get<std::string>());
  p.gather = parse_decomposition(j.at("gather").get<std::string>());
  p.reduce = parse_decomposition(j.at("reduce").get<std::string>());
  p.quant_block = whole<std::size_t>(j, "quant_block");
  p.bucket_bytes = whole<std::size_t>(j, "bucket_bytes");
  p.prefetch = whole<int>(j, "prefetch");
  if (j.contains("persist_threshold")) p.persist_threshold = whole<std::size_t>(j, "persist_threshold");  // absent before it existed
  if (j.contains("hop_chunk_bytes")) p.hop_chunk_bytes = whole<std::size_t>(j, "hop_chunk_bytes");  // likewise
  return p;
}
}  // namespace

std::string CheckpointMeta::to_json() const {
  json files_j = json::object();
  for (const CheckpointFile& f : files) files_j[f.name] = {{"bytes", f.bytes}, {"crc32", f.crc32}};
  json j = {{"format", "tierzero-checkpoint"},
                  {"version", 1},
                  {"tierzero_version", "0.1.0"},
                  {"step", step},
                  {"optim_steps", optim_steps},
                  {"model", model_json(model)},
                  {"train",
                   {{"seed", train.seed},
                    {"micro_batch", train.micro_batch},
                    {"grad_accum", train.grad_accum},
                    {"seq_len", train.effective_seq_len()},
                    {"param_dtype", std::string(dtype_name(train.param_dtype))},
                    {"steps", train.steps},
                    {"lr", train.schedule.lr},
                    {"min_lr_ratio", train.schedule.min_lr_ratio},
                    {"warmup", train.schedule.warmup},
                    {"beta1", train.adamw.beta1},
                    {"beta2", train.adamw.beta2},
                    {"eps", train.adamw.eps},
                    {"weight_decay", train.adamw.weight_decay},
                    {"grad_clip", train.grad_clip}}},
                  {"plan", plan_json(plan)},
                  {"topology", topology},
                  {"world_size", world_size},
                  {"loss_scale", loss_scale},
                  {"good_steps", good_steps},
                  {"data", {{"origin", data_origin}, {"next_step", step}}},
                  {"rng", {{"sampler", "counter hash of (seed, step, micro-batch, sample)"}, {"seed", train.seed}}},
                  {"files", files_j}};
  if (tp > 1) j["tp"] = tp, j["tp_level"] = tp_level;
  return j.dump(2) + "\n";
}

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find_first_of(std::string("/\\\0", 3)) == std::string::npos;
}

CheckpointMeta CheckpointMeta::from_json(const std::string& text, const std::string& origin) {
  CheckpointMeta m;
  try {
    const json j = json::parse(text);
    TZ_CHECK(j.value("format", "") == "tierzero-checkpoint", FormatError, origin + ": not a tierzero checkpoint (format field)");
    TZ_CHECK(whole<int>(j, "version") == 1, FormatError, origin + ": unsupported checkpoint version");
    m.step = whole<std::int64_t>(j, "step");
    m.optim_steps = whole<std::int64_t>(j, "optim_steps");
    TZ_CHECK(m.step >= 0 && m.optim_steps >= 0, ConfigError, "'step' and 'optim_steps' must be >= 0");
    const json& mj = j.at("model");
    m.model = model_from_json(mj, origin);
    const json& t = j.at("train");
    m.train.model = m.model;
    m.train.seed = whole<std::uint64_t>(t, "seed");
    m.train.micro_batch = whole<int>(t, "micro_batch");
    m.train.grad_accum = whole<int>(t, "grad_accum");
    m.train.seq_len = whole<int>(t, "seq_len");
    m.train.param_dtype = parse_dtype(t.at("param_dtype").get<std::string>());
    m.train.steps = whole<std::int64_t>(t, "steps");
    m.train.schedule.lr = real(t, "lr");
    m.train.schedule.min_lr_ratio = real(t, "min_lr_ratio");
    m.train.schedule.warmup = whole<std::int64_t>(t, "warmup");
    m.train.adamw = AdamWConfig{real(t, "beta1"), real(t, "beta2"), real(t, "eps"), real(t, "weight_decay")};
    m.train.grad_clip = real(t, "grad_clip");
    m.plan = plan_from(j.at("plan"));
    m.topology = j.at("topology").get<std::string>();
    m.world_size = whole<int>(j, "world_size");
    TZ_CHECK(m.world_size >= 1, ConfigError, "'world_size' must be at least 1");
    if (j.contains("tp")) {
      m.tp = whole<int>(j, "tp");
      m.tp_level = j.at("tp_level").get<std::string>();
      TZ_CHECK(m.tp >= 2, ConfigError, "'tp' must be at least 2 when given");
      parse_level(m.tp_level);  // a ConfigError naming it
    }
    m.loss_scale = real(j, "loss_scale");
    m.good_steps = whole<int>(j, "good_steps");
    m.data_origin = j.at("data").at("origin").get<std::string>();
    for (auto& [name, f] : j.at("files").items()) {
      // A shard is a file in the checkpoint's folder: a name that leads out of it is refused before anything is opened.
      TZ_CHECK(is_plain_file_name(name), FormatError,
               origin + ": file name '" + name + "' leaves the checkpoint's folder (a shard's name is a plain file name: no '/' or '\\', not '.' or '..')");
      m.files.push_back({name, whole<std::uint64_t>(f, "bytes"), whole<std::uint32_t>(f, "crc32")});
    }
  } catch (const json::exception& e) {
    TZ_THROW(FormatError, origin + ": malformed checkpoint metadata (" + e.what() + ")");
  } catch (const ConfigError& e) {
    TZ_THROW(FormatError, origin + ": " + e.message());
  }
  return m;
}

std::vector<std::string> remove_save_leftovers(const std::string& dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".tmp-step-", 0) != 0 && name != "latest.tmp") continue;
    fs::remove_all(e.path(), ec);
    removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace tierzero
