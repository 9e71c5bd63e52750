// Tokenizers that turn text into training ids and back: the byte-level one
// (vocabulary 256, id = byte) and GPT-2's byte-level BPE (OpenAI's r50k /
// "gpt2" encoding, vocabulary 50257, used by GPT-2, nanoGPT and llm.c).
//
// Gpt2Tokenizer reads the vocabulary files the user provides — OpenAI's
// encoder.json + vocab.bpe, or a tiktoken ranks file (one "base64-token
// rank" per line) — and encodes as tiktoken does: the text is split by
// GPT-2's pre-tokenisation pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (run by PCRE2, \s being Unicode's White_Space property as in tiktoken's
// Rust regex), then each piece's bytes are merged pairwise, lowest rank
// first, until no adjacent pair forms a token. Special tokens in the text
// are ordinary text (tiktoken's encode_ordinary). Immutable after load;
// encode/decode are thread-safe.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tierzero {

class Gpt2Tokenizer {
 public:
  // `path`: a directory holding encoder.json and vocab.bpe, or else one
  // *.tiktoken file, or such a file itself. Throws ConfigError when no
  // such files are there and FormatError naming the file, line and problem
  // when they are malformed or disagree (a merge of vocab.bpe that
  // encoder.json numbers differently).
  static Gpt2Tokenizer load(const std::string& path);
  ~Gpt2Tokenizer();
  Gpt2Tokenizer(Gpt2Tokenizer&&) noexcept;
  Gpt2Tokenizer& operator=(Gpt2Tokenizer&&) noexcept;

  // Throws FormatError when `text` is not valid UTF-8 (naming the byte offset).
  std::vector<std::uint32_t> encode(std::string_view text) const;
  // The bytes of the ids' tokens, concatenated (may end inside a UTF-8
  // character). Throws ConfigError for an id outside the vocabulary.
  std::string decode(const std::vector<std::uint32_t>& ids) const;
  // Number of ids, <|endoftext|> included (50257 for GPT-2).
  std::uint32_t vocab() const;
  // The id of <|endoftext|> (50256), the document separator.
  std::uint32_t end_of_text() const;

  struct Impl;  // src/data/tokenizer.cc

 private:
  explicit Gpt2Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tierzero
