#include "tierzero/safetensors.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tierzero/dtype.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {
std::size_t dtype_bytes(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL") return 1;
  return 0;
}

template <class Out>
std::vector<Out> convert(const SafeTensor& t) {
  const std::size_t n = t.numel();
  std::vector<Out> out(n);
  const std::byte* p = t.data.data();
  for (std::size_t i = 0; i < n; ++i) {
    if (t.dtype == "F32") { float v; std::memcpy(&v, p + 4 * i, 4); out[i] = static_cast<Out>(v); }
    else if (t.dtype == "F64") { double v; std::memcpy(&v, p + 8 * i, 8); out[i] = static_cast<Out>(v); }
    else if (t.dtype == "BF16") { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = static_cast<Out>(bf16_to_f32(v)); }
    else if (t.dtype == "F16") { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = static_cast<Out>(f16_to_f32(v)); }
    else if (t.dtype == "I32") { std::int32_t v; std::memcpy(&v, p + 4 * i, 4); out[i] = static_cast<Out>(v); }
    else if (t.dtype == "I64") { std::int64_t v; std::memcpy(&v, p + 8 * i, 8); out[i] = static_cast<Out>(v); }
    else TZ_THROW(FormatError, "cannot convert safetensors dtype " + t.dtype);
  }
  return out;
}
}  // namespace

std::size_t SafeTensor::numel() const {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}
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
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  TZ_CHECK(in, FormatError, where + ": cannot open");
  const std::uint64_t size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  std::uint64_t n = 0;
  TZ_CHECK(size >= 8 && in.read(reinterpret_cast<char*>(&n), 8), FormatError, where + ": truncated (no header length)");
  TZ_CHECK(n <= size - 8, FormatError, where + ": truncated: header of " + std::to_string(n) + " bytes does not fit");
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header);
  } catch (const nlohmann::json::exception& e) {
    TZ_THROW(FormatError, where + ": bad header JSON (" + e.what() + ")");
  }
  TZ_CHECK(j.is_object(), FormatError, where + ": header is not a JSON object");
  const std::uint64_t data_bytes = size - 8 - n;
  std::vector<std::byte> data(data_bytes);
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data_bytes));
  SafeTensorsFile f;
  for (auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      for (auto& [k, s] : v.items()) f.metadata[k] = s.is_string() ? s.get<std::string>() : s.dump();
      continue;
    }
    try {
      SafeTensor t;
      t.dtype = v.at("dtype").get<std::string>();
      t.shape = v.at("shape").get<std::vector<std::int64_t>>();
      const auto off = v.at("data_offsets").get<std::vector<std::uint64_t>>();
      const std::size_t esize = dtype_bytes(t.dtype);
      TZ_CHECK(esize > 0, FormatError, where + ": tensor '" + name + "' has unknown dtype " + t.dtype);
      TZ_CHECK(off.size() == 2 && off[0] <= off[1] && off[1] <= data_bytes, FormatError,
               where + ": tensor '" + name + "' has data offsets outside the file (truncated?)");
      TZ_CHECK(off[1] - off[0] == t.numel() * esize, FormatError,
               where + ": tensor '" + name + "' has " + std::to_string(off[1] - off[0]) + " bytes for its shape's " +
                   std::to_string(t.numel() * esize));
      t.data.assign(data.begin() + static_cast<std::ptrdiff_t>(off[0]), data.begin() + static_cast<std::ptrdiff_t>(off[1]));
      f.tensors.emplace(name, std::move(t));
    } catch (const nlohmann::json::exception& e) {
      TZ_THROW(FormatError, where + ": tensor '" + name + "' has a malformed entry (" + e.what() + ")");
    }
  }
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
