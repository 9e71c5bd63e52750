#include "ckpt/safetensors_reader.h"

#include <algorithm>
#include <cstring>

#include "tierzero/error.h"

namespace tierzero {

namespace {
constexpr std::size_t kChunkElements = std::size_t{1} << 20;  // staging for dtypes other than F32: 2-8 MiB
}  // namespace

SafeTensorsReader::SafeTensorsReader(const std::string& path)
    : path_(path), where_("safetensors file '" + path + "'"), file_(path) {
  TZ_CHECK(file_.is_open(), FormatError, where_ + ": cannot open");
  const std::uint64_t size = file_.size();
  std::uint64_t n = 0;
  TZ_CHECK(size >= 8 && file_.read_at(0, &n, 8), FormatError, where_ + ": truncated (no header length)");
  TZ_CHECK(n <= size - 8, FormatError, where_ + ": truncated: header of " + std::to_string(n) + " bytes does not fit");
  std::string json(n, '\0');
  TZ_CHECK(file_.read_at(8, json.data(), n), FormatError, where_ + ": cannot read its header");
  data_offset_ = 8 + n;
  header_ = parse_safetensors_header(json, size - data_offset_, where_);
}

void SafeTensorsReader::read_f32(const SafeTensorEntry& t, std::size_t first, std::size_t count, float* out) {
  TZ_CHECK(first + count <= t.numel(), Error, where_ + ": a read past the end of a tensor");
  const std::size_t esize = safetensors_dtype_bytes(t.dtype);
  const std::uint64_t at = data_offset_ + t.begin + first * esize;
  const auto read = [&](std::uint64_t offset, void* into, std::size_t bytes) {
    TZ_CHECK(file_.read_at(offset, into, bytes), FormatError, where_ + ": truncated (it changed after it was opened?)");
    bytes_read_ += bytes;
  };
  if (t.dtype == "F32") {  // straight into place
    read(at, out, count * sizeof(float));
    return;
  }
  staging_.resize(std::min(count, kChunkElements) * esize);
  for (std::size_t done = 0; done < count;) {
    const std::size_t n = std::min(count - done, kChunkElements);
    read(at + done * esize, staging_.data(), n * esize);
    safetensors_to_f32(t.dtype, staging_.data(), n, out + done);
    done += n;
  }
}

}  // namespace tierzero
