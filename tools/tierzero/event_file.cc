#include "event_file.h"

#include <isa-l/crc.h>

#include <cstring>

#include "tierzero/error.h"

namespace tierzero::cli {

namespace {
constexpr std::uint32_t kMaskDelta = 0xa282ead8u;
constexpr std::size_t kHeader = 12, kFooter = 4;

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint64_t get_le(std::string_view b, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}
}  // namespace

std::uint32_t crc32c(std::string_view data) {
  // ISA-L's crc32_iscsi neither inverts its input nor its output: CRC-32C is ~crc32_iscsi(data, ~0).
  std::uint32_t crc = 0xffffffffu;
  constexpr std::size_t kChunk = 1u << 30;  // its length is an int
  for (std::size_t at = 0; at < data.size(); at += kChunk) {
    const std::size_t n = std::min(kChunk, data.size() - at);
    crc = crc32_iscsi(reinterpret_cast<unsigned char*>(const_cast<char*>(data.data() + at)), static_cast<int>(n), crc);
  }
  return ~crc;
}

std::uint32_t masked_crc32c(std::string_view data) {
  const std::uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + kMaskDelta;
}

void append_record(std::string& out, std::string_view data) {
  std::string length;
  const std::uint64_t n = data.size();
  for (int i = 0; i < 8; ++i) length.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += length;
  put_u32(out, masked_crc32c(length));
  out.append(data.data(), data.size());
  put_u32(out, masked_crc32c(data));
}

RecordScan read_records(std::string_view bytes, const std::string& origin) {
  RecordScan scan;
  std::size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < kHeader) break;
    const std::uint64_t n = get_le(bytes, at, 8);
    TZ_CHECK(get_le(bytes, at + 8, 4) == masked_crc32c(bytes.substr(at, 8)), FormatError,
             origin + ": the length of the record at byte " + std::to_string(at) + " fails its CRC-32C");
    if (bytes.size() - at - kHeader < kFooter || n > bytes.size() - at - kHeader - kFooter) break;
    const std::string_view data = bytes.substr(at + kHeader, n);
    TZ_CHECK(get_le(bytes, at + kHeader + n, 4) == masked_crc32c(data), FormatError,
             origin + ": the record at byte " + std::to_string(at) + " fails its CRC-32C");
    scan.records.emplace_back(data);
    at += kHeader + n + kFooter;
  }
  scan.torn_bytes = bytes.size() - at;
  return scan;
}

}  // namespace tierzero::cli
