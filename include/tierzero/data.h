// Token data (docs/formats.md): a flat file of
// little-endian token ids behind a 32-byte header, memory-mapped; the
// built-in corpus; the byte-level tokenizer; and the batch sampler, a pure
// function of (seed, step, micro-batch, sample) so runs resume exactly and
// data-parallel ranks see distinct samples.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tierzero {

// On-disk header, little-endian.
struct TokenFileHeader {
  char magic[8];              // "TZTOKENS"
  std::uint32_t version;      // 1
  std::uint32_t token_bytes;  // 2 (uint16 ids) or 4 (uint32 ids)
  std::uint64_t count;        // number of tokens after the header
  std::uint32_t vocab;        // every id is < vocab
  std::uint32_t reserved;     // 0
};
static_assert(sizeof(TokenFileHeader) == 32, "token file header is 32 bytes");

// A read-only sequence of token ids. Thread-safe to read.
class TokenData {
 public:
  // Maps a token file (tierzero's or llm.c's, told by its header) or a
  // Megatron-LM dataset (PREFIX, PREFIX.bin or PREFIX.idx with both files
  // present); throws FormatError naming the file and the problem (missing,
  // unknown header, bad version, bad dtype, truncated, an index that does
  // not match its .bin, id >= vocab).
  static TokenData open(const std::string& path);
  // The built-in corpus (data/kjv.txt, byte tokens): under $TZ_DATA_DIR when set, else the source tree's data/.
  static TokenData builtin();
  // "builtin" or a path.
  static TokenData load(const std::string& spec);
  static TokenData from_tokens(std::vector<std::uint32_t> tokens, std::uint32_t vocab, std::string origin);

  // Ids [begin, end) sharing this data's storage (a held-out split). Throws ConfigError when out of range.
  TokenData slice(std::size_t begin, std::size_t end) const;

  std::size_t size() const { return count_; }
  std::uint32_t vocab() const { return vocab_; }
  const std::string& origin() const { return origin_; }
  std::uint32_t operator[](std::size_t i) const {
    return token_bytes_ == 2 ? reinterpret_cast<const std::uint16_t*>(data_)[i] : reinterpret_cast<const std::uint32_t*>(data_)[i];
  }

  struct Storage;  // the mapped file or owned ids (src/data/data.cc)

 private:
  std::shared_ptr<Storage> storage_;
  const void* data_ = nullptr;
  std::size_t count_ = 0;
  std::uint32_t vocab_ = 0, token_bytes_ = 4;
  std::string origin_;
};

// Where a token file's ids are: tierzero's format (the header above), or
// an llm.c / nanoGPT shard (llm.c's dev/data scripts: 256 little-endian
// int32 — magic 20240520, version 1 for uint16 ids or 2 for uint32, the
// token count — then the ids; it records no vocabulary, so `vocab` is the
// largest id + 1).
struct TokenFileLayout {
  const char* format;        // "tierzero", "llm.c" or "megatron"
  std::size_t offset;        // bytes before the first id
  std::uint32_t token_bytes; // 2 or 4
  std::uint64_t count;
  std::uint32_t vocab;       // every id is below it
};
// Checks a whole token file held in memory, recognised by its header
// (size, every id below the vocabulary), and returns its layout; throws
// FormatError naming `where` and the problem. TokenData::open uses it on
// the mapped file.
TokenFileLayout check_token_file(const void* file, std::size_t bytes, const std::string& where);

// A Megatron-LM indexed dataset (megatron/core/datasets/indexed_dataset.py):
// PREFIX.bin holds the documents' ids back to back, PREFIX.idx describes
// them — the magic "MMIDIDX\0\0", uint64 version 1, uint8 dtype code (8 =
// uint16, 4 = int32 are the token types; others are rejected), uint64
// sequence count S, uint64 document count D, int32 lengths[S], int64 byte
// pointers[S], int64 document starts[D] (0 first, S last). Checks the index
// against a .bin of `bin_bytes` and returns the .bin's layout (offset 0; its
// vocabulary is not known yet: 0). Throws FormatError naming `where`.
TokenFileLayout check_megatron_index(const void* idx, std::size_t idx_bytes, std::size_t bin_bytes, const std::string& where);
// The .idx beside a Megatron dataset named by `spec` (PREFIX, PREFIX.bin or
// PREFIX.idx), or "" when `spec` names none.
std::string megatron_index_path(const std::string& spec);

// Writes a token file atomically (temporary name, then rename). ids must be
// < vocab; uint16 storage when vocab <= 65536, else uint32.
void write_token_file(const std::string& path, const std::vector<std::uint32_t>& tokens, std::uint32_t vocab);

class BpeTokenizer;
// Tokenises text files into a token file (`tierzero data prepare`): with
// `bpe` null, bytes (vocabulary 256); else BPE, the files' texts apart by
// its end_of_text() as GPT-2's training data, each after its
// begin_of_text() when its encode adds one (Llama 2's and Mistral's
// <s>, as Hugging Face's encode puts it first). Throws ConfigError for
// an input that cannot be read, FormatError naming the input for text that
// is not UTF-8. Returns the number of tokens written.
std::size_t prepare_token_file(const std::vector<std::string>& inputs, const BpeTokenizer* bpe, const std::string& output);

// Byte-level tokenizer: vocabulary 256, id = byte value.
std::vector<std::uint32_t> byte_encode(std::string_view text);
std::string byte_decode(const std::vector<std::uint32_t>& ids);

// Picks training windows. Sample `global_index` of micro-batch `micro` of
// step `step` starts at a position drawn from a counter-based hash of
// (seed, step, micro, global_index): no state, so any rank can compute any
// sample and a resumed run continues with exactly the same data. Data-
// parallel rank r of W with micro-batch B uses global indices r*B .. r*B+B-1,
// so W ranks together see exactly what one rank with micro-batch W*B sees.
// Held-out batches: batch b of `batches` is `count` windows of seq_len
// tokens (targets: the next tokens) at evenly spaced positions over
// `data`, so every run, seed, strategy and rank count evaluates the same
// windows. `data` needs at least seq_len + 1 ids.
void fill_eval_batch(const TokenData& data, int seq_len, int batches, int b, int count, int* tokens, int* targets);

class BatchSampler {
 public:
  BatchSampler(const TokenData& data, int seq_len, std::uint64_t seed);
  // tokens, targets: [count, seq_len]; targets are tokens shifted by one.
  void fill(std::uint64_t step, int micro, int first_global_index, int count, int* tokens, int* targets) const;

 private:
  const TokenData& data_;
  int seq_len_;
  std::uint64_t seed_;
};

}  // namespace tierzero
