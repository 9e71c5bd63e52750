// The safetensors format (Hugging Face): an 8-byte little-endian header
// length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin,
// end]}, "__metadata__": {str: str}}, then the raw little-endian tensor
// bytes, offsets relative to the end of the header. Value types; a file
// read whole here, or its header only and tensors by ranges
// (safetensors_reader.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tierzero {

// One tensor's entry in the header: where its bytes lie, from the start of the data.
struct SafeTensorEntry {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
  std::size_t numel() const;
};

// A header, checked: every entry's dtype known, its offsets inside the
// `data_bytes` that follow the header and its size its shape's.
struct SafeTensorsHeader {
  std::map<std::string, SafeTensorEntry> tensors;
  std::map<std::string, std::string> metadata;
};
// Throws FormatError naming `where` and the problem (bad JSON, an unknown
// dtype, offsets outside the data, a size that is not the shape's).
SafeTensorsHeader parse_safetensors_header(std::string_view json, std::uint64_t data_bytes, const std::string& where);
// Elements of a tensor of this shape (the product of its dimensions; 1 for a scalar).
std::size_t shape_numel(const std::vector<std::int64_t>& shape);
// Bytes per element of a safetensors dtype (0 when unknown).
std::size_t safetensors_dtype_bytes(const std::string& dtype);
// `n` elements of `dtype` at `p` as fp32 (F32, F64, BF16, F16, I32, I64); FormatError otherwise.
void safetensors_to_f32(const std::string& dtype, const std::byte* p, std::size_t n, float* out);

struct SafeTensor {
  std::string dtype;               // "F32", "F64", "BF16", "F16", "I32", "I64", "U8", ...
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;

  std::size_t numel() const;
  // The elements as fp32/fp64/int32 (F32, F64, BF16, F16 / I32, I64 accepted); throws FormatError otherwise.
  std::vector<float> as_f32() const;
  std::vector<double> as_f64() const;
  std::vector<std::int32_t> as_i32() const;
};

struct SafeTensorsFile {
  std::map<std::string, SafeTensor> tensors;
  std::map<std::string, std::string> metadata;
  // Throws FormatError naming `name` when absent.
  const SafeTensor& at(const std::string& name) const;
};

// Throws FormatError naming the file and the problem (truncated, bad header
// JSON, offsets out of range or overlapping, unknown dtype, size mismatch).
SafeTensorsFile read_safetensors(const std::string& path);
// The same for a whole file held in memory; `where` names it in errors.
SafeTensorsFile parse_safetensors(std::string_view file, const std::string& where);
// Written under a temporary name and renamed.
void write_safetensors(const std::string& path, const SafeTensorsFile& file);
SafeTensor make_f32_tensor(std::vector<std::int64_t> shape, const float* data);

}  // namespace tierzero
