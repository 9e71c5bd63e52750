#include "ckpt/safetensors.h"

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>

#include "tierzero/dtype.h"
#include "tierzero/error.h"
#include "core/read_file.h"

namespace tierzero {

std::size_t safetensors_dtype_bytes(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL") return 1;
  return 0;
}

namespace {
// out[i] = f(element i of type In at p), the dtype decided once for the whole run.
template <class In, class Out, class F>
void each(const std::byte* p, std::size_t n, Out* out, F f) {
  for (std::size_t i = 0; i < n; ++i) {
    In v;
    std::memcpy(&v, p + sizeof(In) * i, sizeof(In));
    out[i] = static_cast<Out>(f(v));
  }
}

template <class Out>
void convert(const std::string& dtype, const std::byte* p, std::size_t n, Out* out) {
  const auto same = [](auto v) { return v; };
  if (dtype == "F32") each<float>(p, n, out, same);
  else if (dtype == "F64") each<double>(p, n, out, same);
  else if (dtype == "BF16") each<std::uint16_t>(p, n, out, bf16_to_f32);
  else if (dtype == "F16") each<std::uint16_t>(p, n, out, f16_to_f32);
  else if (dtype == "I32") each<std::int32_t>(p, n, out, same);
  else if (dtype == "I64") each<std::int64_t>(p, n, out, same);
  else TZ_THROW(FormatError, "cannot convert safetensors dtype " + dtype);
}

template <class Out>
std::vector<Out> convert(const SafeTensor& t) {
  std::vector<Out> out(t.numel());
  convert(t.dtype, t.data.data(), out.size(), out.data());
  return out;
}

}  // namespace

std::size_t shape_numel(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

void safetensors_to_f32(const std::string& dtype, const std::byte* p, std::size_t n, float* out) { convert(dtype, p, n, out); }

std::size_t SafeTensorEntry::numel() const { return shape_numel(shape); }

std::size_t SafeTensor::numel() const { return shape_numel(shape); }

namespace {
// Bytes of a tensor of `shape` and `esize`-byte elements, or nothing when a
// dimension is negative or the product does not fit in 64 bits.
std::optional<std::uint64_t> tensor_bytes(const std::vector<std::int64_t>& shape, std::size_t esize) {
  std::uint64_t n = esize;
  for (std::int64_t d : shape) {
    if (d < 0 || (d > 0 && n > UINT64_MAX / static_cast<std::uint64_t>(d))) return std::nullopt;
    n *= static_cast<std::uint64_t>(d);
  }
  return n;
}
}  // namespace
std::vector<float> SafeTensor::as_f32() const { return convert<float>(*this); }
std::vector<double> SafeTensor::as_f64() const { return convert<double>(*this); }
std::vector<std::int32_t> SafeTensor::as_i32() const { return convert<std::int32_t>(*this); }

const SafeTensor& SafeTensorsFile::at(const std::string& name) const {
  auto it = tensors.find(name);
  TZ_CHECK(it != tensors.end(), FormatError, "safetensors file has no tensor '" + name + "'");
  return it->second;
}

SafeTensorsFile read_safetensors(const std::string& path) {
  const std::string where = "safetensors file '" + path + "'";
  const auto file = read_file(path);
  TZ_CHECK(file, FormatError, where + ": cannot open");
  return parse_safetensors(*file, where);
}

SafeTensorsHeader parse_safetensors_header(std::string_view header, std::uint64_t data_bytes, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header);
  } catch (const nlohmann::json::exception& e) {
    TZ_THROW(FormatError, where + ": bad header JSON (" + e.what() + ")");
  }
  TZ_CHECK(j.is_object(), FormatError, where + ": header is not a JSON object");
  SafeTensorsHeader h;
  for (auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      for (auto& [k, s] : v.items()) h.metadata[k] = s.is_string() ? s.get<std::string>() : s.dump();
      continue;
    }
    try {
      SafeTensorEntry t;
      t.dtype = v.at("dtype").get<std::string>();
      t.shape = v.at("shape").get<std::vector<std::int64_t>>();
      const auto off = v.at("data_offsets").get<std::vector<std::uint64_t>>();
      const std::size_t esize = safetensors_dtype_bytes(t.dtype);
      TZ_CHECK(esize > 0, FormatError, where + ": tensor '" + name + "' has unknown dtype " + t.dtype);
      TZ_CHECK(off.size() == 2 && off[0] <= off[1] && off[1] <= data_bytes, FormatError,
               where + ": tensor '" + name + "' has data offsets outside the file (truncated?)");
      const std::optional<std::uint64_t> need = tensor_bytes(t.shape, esize);
      TZ_CHECK(need, FormatError, where + ": tensor '" + name + "' has a negative or too large shape");
      TZ_CHECK(off[1] - off[0] == *need, FormatError,
               where + ": tensor '" + name + "' has " + std::to_string(off[1] - off[0]) + " bytes for its shape's " +
                   std::to_string(*need));
      t.begin = off[0], t.end = off[1];
      h.tensors.emplace(name, std::move(t));
    } catch (const nlohmann::json::exception& e) {
      TZ_THROW(FormatError, where + ": tensor '" + name + "' has a malformed entry (" + e.what() + ")");
    }
  }
  return h;
}

SafeTensorsFile parse_safetensors(std::string_view file, const std::string& where) {
  const std::uint64_t size = file.size();
  std::uint64_t n = 0;
  TZ_CHECK(size >= 8, FormatError, where + ": truncated (no header length)");
  std::memcpy(&n, file.data(), 8);
  TZ_CHECK(n <= size - 8, FormatError, where + ": truncated: header of " + std::to_string(n) + " bytes does not fit");
  SafeTensorsHeader h = parse_safetensors_header(file.substr(8, n), size - 8 - n, where);
  const auto* data = reinterpret_cast<const std::byte*>(file.data()) + 8 + n;
  SafeTensorsFile f;
  f.metadata = std::move(h.metadata);
  for (auto& [name, e] : h.tensors) f.tensors.emplace(name, SafeTensor{e.dtype, e.shape, std::vector<std::byte>(data + e.begin, data + e.end)});
  return f;
}

void write_safetensors(const std::string& path, const SafeTensorsFile& f) {
  nlohmann::ordered_json j;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : f.tensors) {
    j[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  if (!f.metadata.empty()) j["__metadata__"] = f.metadata;
  std::string header = j.dump();
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string tmp = path + ".tmp";  // the file appears whole or not at all; a failed write leaves nothing behind
  bool written = false;
  {
    std::ofstream out(tmp, std::ios::binary);
    TZ_CHECK(out, FormatError, "cannot write '" + path + "'");
    const std::uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto& [name, t] : f.tensors) out.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
    out.flush();
    written = out.good();
  }
  if (!written || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    TZ_THROW(FormatError, written ? "cannot rename '" + tmp + "' to '" + path + "'" : "error writing '" + path + "' (disk full?)");
  }
}

SafeTensor make_f32_tensor(std::vector<std::int64_t> shape, const float* data) {
  SafeTensor t{"F32", std::move(shape), {}};
  t.data.resize(t.numel() * 4);
  std::memcpy(t.data.data(), data, t.data.size());
  return t;
}

}  // namespace tierzero
