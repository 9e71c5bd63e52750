#include "tierzero/data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/read_file.h"
#include "tierzero/error.h"
#include "tierzero/tokenizer.h"

#ifndef TZ_DATA_DIR
#error "TZ_DATA_DIR must name the folder holding the built-in corpus"
#endif

namespace tierzero {

struct TokenData::Storage {
  void* map = nullptr;
  std::size_t map_bytes = 0;
  std::vector<std::uint32_t> owned;
  ~Storage() {
    if (map) munmap(map, map_bytes);
  }
};

namespace {
// llm.c's shard header (dev/data/data_common.py): 256 int32.
constexpr std::int32_t kLlmcMagic = 20240520;
constexpr std::size_t kLlmcHeaderBytes = 256 * 4;

// The ids after `offset`: their count must fill the rest of the file exactly, each below `vocab` (0: any; then the
// largest + 1 is returned as the vocabulary).
std::uint32_t check_ids(const unsigned char* file, std::size_t bytes, std::size_t offset, std::uint32_t token_bytes,
                        std::uint64_t count, std::uint32_t vocab, const std::string& where) {
  const std::size_t room = (bytes - offset) / token_bytes;  // compared before multiplying: a huge count must not wrap
  TZ_CHECK(count == room && (bytes - offset) % token_bytes == 0, FormatError,
           where + (count > room ? ": truncated: " : ": has trailing bytes: ") + "header says " + std::to_string(count) +
               " tokens of " + std::to_string(token_bytes) + " bytes but the file has " + std::to_string(bytes) + " bytes");
  std::uint32_t largest = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t id = 0;
    if (token_bytes == 2) {
      std::uint16_t v;
      std::memcpy(&v, file + offset + 2 * i, 2);
      id = v;
    } else {
      std::memcpy(&id, file + offset + 4 * i, 4);
    }
    TZ_CHECK(vocab == 0 || id < vocab, FormatError,
             where + ": token " + std::to_string(i) + " has id " + std::to_string(id) + ", not below the vocabulary size " +
                 std::to_string(vocab));
    largest = std::max(largest, id);
  }
  return vocab ? vocab : largest + 1;
}
}  // namespace

TokenFileLayout check_token_file(const void* data, std::size_t bytes, const std::string& where) {
  const auto* file = static_cast<const unsigned char*>(data);
  std::int32_t first[3] = {0, 0, 0};
  if (bytes >= kLlmcHeaderBytes) std::memcpy(first, file, sizeof first);
  if (bytes >= kLlmcHeaderBytes && first[0] == kLlmcMagic) {
    TZ_CHECK(first[1] == 1 || first[1] == 2, FormatError,
             where + ": llm.c shard version " + std::to_string(first[1]) + " (expected 1 for uint16 ids or 2 for uint32)");
    TZ_CHECK(first[2] >= 0, FormatError, where + ": llm.c shard with a negative token count");
    const std::uint32_t token_bytes = first[1] == 1 ? 2 : 4;
    const std::uint64_t count = static_cast<std::uint64_t>(first[2]);
    return {"llm.c", kLlmcHeaderBytes, token_bytes, count, check_ids(file, bytes, kLlmcHeaderBytes, token_bytes, count, 0, where)};
  }
  TZ_CHECK(bytes >= sizeof(TokenFileHeader), FormatError,
           where + ": truncated: " + std::to_string(bytes) + " bytes is shorter than the 32-byte header");
  TokenFileHeader h;
  std::memcpy(&h, file, sizeof h);
  TZ_CHECK(std::memcmp(h.magic, "TZTOKENS", 8) == 0, FormatError,
           where + ": not a token file (bad magic: neither tierzero's TZTOKENS header nor an llm.c shard's; create one "
                   "with 'tierzero data prepare')");
  TZ_CHECK(h.version == 1, FormatError, where + ": unsupported version " + std::to_string(h.version) + " (expected 1)");
  TZ_CHECK(h.token_bytes == 2 || h.token_bytes == 4, FormatError,
           where + ": bad token dtype: " + std::to_string(h.token_bytes) + " bytes per id (expected 2 for uint16 or 4 for uint32)");
  TZ_CHECK(h.vocab > 0, FormatError, where + ": vocabulary size 0");
  check_ids(file, bytes, sizeof h, h.token_bytes, h.count, h.vocab, where);
  return {"tierzero", sizeof h, h.token_bytes, h.count, h.vocab};
}

namespace {
// Maps a whole file read-only (nullptr for an empty one) into `storage`.
const unsigned char* map_file(const std::string& path, const std::string& where, std::size_t& bytes, TokenData::Storage& storage) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  TZ_CHECK(fd >= 0, FormatError, where + ": cannot open '" + path + "' (" + std::strerror(errno) + ")");
  struct stat st {};
  fstat(fd, &st);
  bytes = static_cast<std::size_t>(st.st_size);
  void* map = bytes ? mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  ::close(fd);
  TZ_CHECK(map != MAP_FAILED, FormatError, where + ": cannot map '" + path + "' (" + std::strerror(errno) + ")");
  storage.map = map;
  storage.map_bytes = bytes;
  return static_cast<const unsigned char*>(map);
}

// A Megatron dataset: the index is checked against the .bin, then the .bin's ids.
TokenFileLayout check_megatron(const std::string& idx_path, const unsigned char* bin, std::size_t bin_bytes, const std::string& where) {
  TokenData::Storage index;
  std::size_t idx_bytes = 0;
  const unsigned char* idx = map_file(idx_path, where, idx_bytes, index);
  TokenFileLayout f = check_megatron_index(idx, idx_bytes, bin_bytes, "Megatron index '" + idx_path + "'");
  f.vocab = check_ids(bin, bin_bytes, 0, f.token_bytes, f.count, 0, where);
  TZ_CHECK(f.token_bytes == 2 || f.vocab <= 0x80000000u, FormatError, where + ": has negative int32 ids");
  return f;
}
}  // namespace

TokenData TokenData::open(const std::string& path) {
  const std::string idx = megatron_index_path(path);
  const std::string bin = idx.empty() ? path : idx.substr(0, idx.size() - 4) + ".bin";
  const std::string where = (idx.empty() ? "token file '" : "Megatron data '") + bin + "'";
  auto storage = std::make_shared<Storage>();
  std::size_t bytes = 0;
  const unsigned char* map = map_file(bin, where, bytes, *storage);
  const TokenFileLayout f = idx.empty() ? check_token_file(map, bytes, where) : check_megatron(idx, map, bytes, where);
  TokenData d;
  d.storage_ = storage;
  d.data_ = map + f.offset;
  d.count_ = f.count;
  d.vocab_ = f.vocab;
  d.token_bytes_ = f.token_bytes;
  d.origin_ = bin;
  return d;
}

TokenData TokenData::from_tokens(std::vector<std::uint32_t> tokens, std::uint32_t vocab, std::string origin) {
  auto storage = std::make_shared<Storage>();
  storage->owned = std::move(tokens);
  TokenData d;
  d.storage_ = storage;
  d.data_ = storage->owned.data();
  d.count_ = storage->owned.size();
  d.vocab_ = vocab;
  d.token_bytes_ = 4;
  d.origin_ = std::move(origin);
  return d;
}

TokenData TokenData::slice(std::size_t begin, std::size_t end) const {
  TZ_CHECK(begin <= end && end <= count_, ConfigError,
           "ids " + std::to_string(begin) + " to " + std::to_string(end) + " of '" + origin_ + "', which has " + std::to_string(count_));
  TokenData d = *this;
  d.data_ = static_cast<const char*>(data_) + begin * token_bytes_;
  d.count_ = end - begin;
  d.origin_ = origin_ + " [" + std::to_string(begin) + ", " + std::to_string(end) + ")";
  return d;
}

TokenData TokenData::builtin() {
  // $TZ_DATA_DIR when set (a relocated tree: the GPU bundle, scripts/gpu_bundle.sh), else the source tree's data/.
  const char* dir = std::getenv("TZ_DATA_DIR");
  const std::string path = std::string(dir && *dir ? dir : TZ_DATA_DIR) + "/kjv.txt";
  const auto text = read_file(path);
  TZ_CHECK(text, FormatError, "built-in corpus '" + path + "' is missing (regenerate it with scripts/make_corpus.sh)");
  return from_tokens(byte_encode(*text), 256, "builtin (" + path + ")");
}

TokenData TokenData::load(const std::string& spec) { return spec == "builtin" ? builtin() : open(spec); }

void write_token_file(const std::string& path, const std::vector<std::uint32_t>& tokens, std::uint32_t vocab) {
  TokenFileHeader h{};
  std::memcpy(h.magic, "TZTOKENS", 8);
  h.version = 1;
  h.token_bytes = vocab <= 65536 ? 2 : 4;
  h.count = tokens.size();
  h.vocab = vocab;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    TZ_CHECK(out, FormatError, "cannot write '" + path + "'");
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    for (std::uint32_t t : tokens) {
      TZ_CHECK(t < vocab, FormatError, "token id " + std::to_string(t) + " is not below the vocabulary size " + std::to_string(vocab));
      if (h.token_bytes == 2) {
        const std::uint16_t v = static_cast<std::uint16_t>(t);
        out.write(reinterpret_cast<const char*>(&v), 2);
      } else {
        out.write(reinterpret_cast<const char*>(&t), 4);
      }
    }
    TZ_CHECK(out.good(), FormatError, "error writing '" + path + "' (disk full?)");
  }
  TZ_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, FormatError, "cannot rename '" + tmp + "' to '" + path + "'");
}

std::vector<std::uint32_t> byte_encode(std::string_view text) {
  std::vector<std::uint32_t> ids(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string byte_decode(const std::vector<std::uint32_t>& ids) {
  std::string s(ids.size(), '\0');
  for (std::size_t i = 0; i < ids.size(); ++i) s[i] = static_cast<char>(ids[i] & 0xff);
  return s;
}

BatchSampler::BatchSampler(const TokenData& data, int seq_len, std::uint64_t seed) : data_(data), seq_len_(seq_len), seed_(seed) {
  TZ_CHECK(data.size() > static_cast<std::size_t>(seq_len) + 1, FormatError,
           "data '" + data.origin() + "' has " + std::to_string(data.size()) + " tokens, fewer than one window of " +
               std::to_string(seq_len + 1));
}

namespace {
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

void fill_eval_batch(const TokenData& data, int seq_len, int batches, int b, int count, int* tokens, int* targets) {
  const std::uint64_t span = data.size() - static_cast<std::uint64_t>(seq_len);  // valid window starts: [0, span)
  const std::uint64_t windows = static_cast<std::uint64_t>(batches) * static_cast<std::uint64_t>(count);
  for (int s = 0; s < count; ++s) {
    const std::uint64_t j = static_cast<std::uint64_t>(b) * static_cast<std::uint64_t>(count) + static_cast<std::uint64_t>(s);
    const std::uint64_t start = j * span / windows;
    for (int t = 0; t < seq_len; ++t) {
      tokens[s * seq_len + t] = static_cast<int>(data[start + t]);
      targets[s * seq_len + t] = static_cast<int>(data[start + t + 1]);
    }
  }
}

void BatchSampler::fill(std::uint64_t step, int micro, int first, int count, int* tokens, int* targets) const {
  const std::uint64_t windows = data_.size() - static_cast<std::uint64_t>(seq_len_);
  for (int s = 0; s < count; ++s) {
    const std::uint64_t h = mix(mix(mix(mix(seed_) ^ step) ^ static_cast<std::uint64_t>(micro)) ^ static_cast<std::uint64_t>(first + s));
    const std::uint64_t start = h % windows;
    for (int t = 0; t < seq_len_; ++t) {
      tokens[s * seq_len_ + t] = static_cast<int>(data_[start + t]);
      targets[s * seq_len_ + t] = static_cast<int>(data_[start + t + 1]);
    }
  }
}

std::size_t prepare_token_file(const std::vector<std::string>& inputs, const BpeTokenizer* bpe, const std::string& output) {
  std::vector<std::uint32_t> tokens;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto text = read_file(inputs[i]);
    TZ_CHECK(text, ConfigError, "cannot read input '" + inputs[i] + "'");
    if (!bpe) {
      const auto ids = byte_encode(*text);
      tokens.insert(tokens.end(), ids.begin(), ids.end());
      continue;
    }
    if (i > 0) tokens.push_back(bpe->end_of_text());
    if (bpe->adds_begin_of_text()) tokens.push_back(*bpe->begin_of_text());  // as Hugging Face's encode puts it first
    try {
      const auto ids = bpe->encode(*text);
      tokens.insert(tokens.end(), ids.begin(), ids.end());
    } catch (const FormatError& e) {
      TZ_THROW(FormatError, "input '" + inputs[i] + "': " + e.message());
    }
  }
  write_token_file(output, tokens, bpe ? bpe->vocab() : 256);
  return tokens.size();
}

}  // namespace tierzero
