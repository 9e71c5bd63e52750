// Megatron-LM indexed datasets (tierzero/data.h describes the layout).
#include <cstring>
#include <filesystem>

#include "tierzero/data.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {
constexpr char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
constexpr std::size_t kHeaderBytes = 9 + 8 + 1 + 8 + 8;

template <class T>
T at(const unsigned char* p, std::size_t offset) {
  T v;
  std::memcpy(&v, p + offset, sizeof v);
  return v;
}

// Megatron's DType codes: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16.
std::uint32_t token_bytes_of(std::uint8_t code, const std::string& where) {
  if (code == 8) return 2;
  if (code == 4) return 4;
  static const char* names[] = {"?", "uint8", "int8", "int16", "int32", "int64", "float64", "float32", "uint16"};
  TZ_THROW(FormatError, where + ": token dtype code " + std::to_string(code) + " (" + (code <= 8 ? names[code] : "unknown") +
                            ") is not a token type tierzero reads (uint16, code 8, or int32, code 4)");
}
}  // namespace

TokenFileLayout check_megatron_index(const void* idx, std::size_t idx_bytes, std::size_t bin_bytes, const std::string& where) {
  const auto* p = static_cast<const unsigned char*>(idx);
  TZ_CHECK(idx_bytes >= kHeaderBytes && std::memcmp(p, kMagic, sizeof kMagic) == 0, FormatError,
           where + ": not a Megatron index (no MMIDIDX header)");
  const auto version = at<std::uint64_t>(p, 9);
  TZ_CHECK(version == 1, FormatError, where + ": Megatron index version " + std::to_string(version) + " (expected 1)");
  const std::uint32_t token_bytes = token_bytes_of(at<std::uint8_t>(p, 17), where);
  const auto sequences = at<std::uint64_t>(p, 18), documents = at<std::uint64_t>(p, 26);
  // Each sequence takes 12 index bytes (length, pointer), each document 8; an optional int8 mode per sequence may follow.
  const std::size_t room = idx_bytes - kHeaderBytes;
  TZ_CHECK(sequences <= room / 12 && documents <= (room - 12 * sequences) / 8, FormatError,
           where + ": truncated: " + std::to_string(sequences) + " sequences and " + std::to_string(documents) +
               " documents need more than its " + std::to_string(idx_bytes) + " bytes");
  const std::size_t rest = room - 12 * sequences - 8 * documents;
  TZ_CHECK(rest == 0 || rest == sequences, FormatError, where + ": has " + std::to_string(rest) + " trailing bytes");
  const std::size_t lengths = kHeaderBytes, pointers = lengths + 4 * sequences, starts = pointers + 8 * sequences;
  std::uint64_t count = 0;
  for (std::size_t i = 0; i < sequences; ++i) {
    const auto length = at<std::int32_t>(p, lengths + 4 * i);
    const auto pointer = at<std::int64_t>(p, pointers + 8 * i);
    TZ_CHECK(length >= 0 && pointer == static_cast<std::int64_t>(count * token_bytes), FormatError,
             where + ": sequence " + std::to_string(i) + " (length " + std::to_string(length) + ", byte " + std::to_string(pointer) +
                 ") does not follow the one before it in the .bin");
    count += static_cast<std::uint64_t>(length);
  }
  TZ_CHECK(count * token_bytes == bin_bytes, FormatError,
           where + " does not match its .bin: the index covers " + std::to_string(count) + " tokens (" +
               std::to_string(count * token_bytes) + " bytes) but the .bin has " + std::to_string(bin_bytes) + " bytes");
  TZ_CHECK(documents >= 1 && at<std::int64_t>(p, starts) == 0 &&
               at<std::int64_t>(p, starts + 8 * (documents - 1)) == static_cast<std::int64_t>(sequences),
           FormatError, where + ": document starts must run from 0 to the sequence count " + std::to_string(sequences));
  for (std::size_t d = 1; d < documents; ++d)
    TZ_CHECK(at<std::int64_t>(p, starts + 8 * d) >= at<std::int64_t>(p, starts + 8 * (d - 1)), FormatError,
             where + ": document " + std::to_string(d) + " starts before the one before it");
  return {"megatron", 0, token_bytes, count, 0};
}

std::string megatron_index_path(const std::string& spec) {
  namespace fs = std::filesystem;
  const fs::path p(spec);
  fs::path prefix = p;
  if (p.extension() == ".bin" || p.extension() == ".idx") prefix.replace_extension();
  else if (fs::exists(p)) return "";  // a file of its own: a token file
  fs::path idx = prefix, bin = prefix;
  idx += ".idx";
  bin += ".bin";
  return fs::exists(idx) && (p.extension() == ".idx" || fs::exists(bin)) ? idx.string() : "";
}

}  // namespace tierzero
