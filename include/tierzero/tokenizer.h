// Tokenizers that turn text into training ids and back: the byte-level one
// (vocabulary 256, id = byte) and BPE: GPT-2's (OpenAI's r50k / "gpt2"
// encoding, vocabulary 50257, used by GPT-2, nanoGPT and llm.c) and the
// Hugging Face tokenizer.json of GPT-2, Llama 2/3, Mistral, Qwen2/3 and others.
//
// From a Hugging Face tokenizer.json (the `tokenizers` library's format),
// BpeTokenizer encodes as that library does: its NFC normalizer (through
// ICU, loaded at run time), its added tokens (<|begin_of_text|>,
// <|endoftext|>, <s>, ...) matched in the text first, longest at each
// place, and given their ids; the rest split by its pre-tokenizer (a Split
// pattern, Isolated, then ByteLevel; or ByteLevel with GPT-2's pattern),
// each piece merged by the merges' ranks (the pair of lowest rank first;
// with ignore_merges a piece that is a token is taken whole). A
// byte-fallback BPE (SentencePiece's, as Llama 2 and Mistral ship it:
// model.byte_fallback, with Llama 2's Prepend + Replace normalizer or a
// Metaspace pre-tokenizer that does not split) takes each piece between
// added tokens whole, spaces as U+2581 and one put in front as the file
// says, merges from its characters, and spells a character the vocabulary
// lacks by its UTF-8 bytes' <0xXX> tokens. Other normalizers,
// pre-tokenizers and models (WordPiece, Unigram, ...) are refused by name.
//
// From OpenAI's encoder.json + vocab.bpe, or a tiktoken ranks file (one
// "base64-token rank" per line), it encodes as tiktoken does: the text is split by
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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tierzero {

class BpeTokenizer {
 public:
  // `path`: a tokenizer.json or a directory holding one; else a directory
  // holding encoder.json and vocab.bpe, or else one *.tiktoken file, or
  // such a file itself. Throws ConfigError when no such files are there and
  // FormatError naming the file, key or line and the problem when they are
  // malformed or disagree (a merge of vocab.bpe that encoder.json numbers
  // differently, a merge of tokens the vocabulary lacks).
  static BpeTokenizer load(const std::string& path);
  ~BpeTokenizer();
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;

  // Throws FormatError when `text` is not valid UTF-8 (naming the byte offset).
  std::vector<std::uint32_t> encode(std::string_view text) const;
  // The bytes of the ids' tokens, concatenated (may end inside a UTF-8
  // character); a byte-fallback token's U+2581 decodes as a space, so such
  // a tokenizer gives the text back with the spaces it put in front of
  // pieces (decode(encode("Hi")) is " Hi" for Llama 2). Throws ConfigError
  // for an id outside the vocabulary.
  std::string decode(const std::vector<std::uint32_t>& ids) const;
  // Number of ids, special tokens included (50257 for GPT-2, 32000 for Llama 2, 128256 for Llama 3).
  std::uint32_t vocab() const;
  // The document separator: <|endoftext|> (GPT-2's 50256, Qwen's 151643),
  // Llama 3's <|end_of_text|> (128001) or Llama 2's and Mistral's </s> (2).
  std::uint32_t end_of_text() const;
  // The begin-of-text token: the one tokenizer.json's post-processor
  // (TemplateProcessing) puts before every text, else an added token <s> or
  // <|begin_of_text|> (Llama 2's and Mistral's <s>, 1; Llama 3's, 128000);
  // none for GPT-2, Qwen and OpenAI's files.
  std::optional<std::uint32_t> begin_of_text() const;
  // Whether Hugging Face's encode (with special tokens) puts it before every
  // text: the post-processor does (Llama 2's and Mistral's files; Llama 3's
  // first release does not).
  bool adds_begin_of_text() const;
  // Whether this is a byte-fallback (SentencePiece-style) BPE.
  bool byte_fallback() const;

  struct Impl;  // src/data/tokenizer.cc

 private:
  explicit BpeTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tierzero
