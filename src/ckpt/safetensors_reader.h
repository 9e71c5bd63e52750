// One safetensors file (safetensors.h) opened for random access: the
// header read and checked when it opens, tensor elements read by ranges,
// so whoever reads holds only the ranges it asked for. Counts the tensor
// bytes it reads. One thread.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/safetensors.h"
#include "core/read_file.h"

namespace tierzero {

class SafeTensorsReader {
 public:
  // Throws FormatError naming the file: cannot open, truncated, a bad header (parse_safetensors_header).
  explicit SafeTensorsReader(const std::string& path);
  const std::string& path() const { return path_; }
  const SafeTensorsHeader& header() const { return header_; }
  // Elements [first, first + count) of `t` (an entry of header()) as fp32;
  // FormatError when the file ends early (changed since it was opened).
  void read_f32(const SafeTensorEntry& t, std::size_t first, std::size_t count, float* out);
  std::uint64_t bytes_read() const { return bytes_read_; }

 private:
  std::string path_, where_;
  InputFile file_;
  std::uint64_t data_offset_ = 0;  // where the tensor data begins
  SafeTensorsHeader header_;
  std::uint64_t bytes_read_ = 0;
  std::vector<std::byte> staging_;  // narrower dtypes' bytes, converted chunk by chunk
};

}  // namespace tierzero
