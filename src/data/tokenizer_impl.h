// BpeTokenizer's state and merge, shared by its loaders: GPT-2's files
// (tokenizer.cc) and Hugging Face's tokenizer.json (hf_tokenizer.cc). Internal.
#pragma once
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tierzero/error.h"
#include "tierzero/tokenizer.h"

namespace tierzero {

namespace bpe {
// Unicode's White_Space property, as a character class's contents: what
// tiktoken's Rust regex and Oniguruma (Hugging Face tokenizers) mean by \s
// (PCRE2's \s would leave out U+0085).
inline constexpr const char* kWhiteSpace = R"(\t\n\x{0B}\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";
inline constexpr std::string_view kEndOfText = "<|endoftext|>";
// SentencePiece's space mark, U+2581 (what byte-fallback vocabularies spell a space with).
inline constexpr std::string_view kSpaceMark = "\xE2\x96\x81";
std::string gpt2_pattern();
// GPT-2's reversible byte <-> printable character map (encoder.json, tokenizer.json's ByteLevel).
std::array<char32_t, 256> byte_characters();
// Decodes one byte-level key (UTF-8 of byte characters) into its bytes; false for a character that stands for no byte.
bool key_bytes(const std::string& key, const std::unordered_map<char32_t, unsigned char>& byte_of, std::string& out);
// A tokenizer file's text; ConfigError naming it when it cannot be read.
std::string read_text(const std::filesystem::path& p);
}  // namespace bpe

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct BpeTokenizer::Impl {
  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> ranks;  // token bytes -> id (no special tokens)
  std::vector<std::string> tokens;  // id -> bytes, <|endoftext|> and added tokens included
  std::uint32_t eot = 0;
  pcre2_code* pattern = nullptr;
  // tokenizer.json's parts (hf_tokenizer.cc): merge ranks by pair of ids
  // (empty: tiktoken's rule, the rank of the union), whether a piece that
  // is a token skips the merges, the added tokens matched before splitting,
  // a space put before the text, NFC normalisation.
  std::unordered_map<std::uint64_t, std::uint32_t> pair_ranks;
  bool whole_first = true;
  std::vector<std::pair<std::string, std::uint32_t>> added;  // longest first
  std::array<bool, 256> added_first{};                        // the bytes an added token starts with
  bool prefix_space = false, nfc = false;
  // The begin-of-text token (Llama's <s> or <|begin_of_text|>), if any, and whether
  // tokenizer.json's post-processor puts it before every text.
  std::optional<std::uint32_t> bos;
  bool adds_bos = false;
  // Byte-fallback (SentencePiece-style) BPE, Llama 2's and Mistral's: the
  // vocabulary's keys are text with spaces spelled U+2581; a piece is the
  // whole text between added tokens, its spaces marked and, by `mark`, a
  // mark put in front; its first parts are its characters, and a character
  // the vocabulary lacks becomes the <0xXX> tokens of its UTF-8 bytes
  // (byte_ids), which no merge joins.
  enum class Mark {
    never,               // the normalizer's Replace alone, or Metaspace "never"
    always,              // Llama 2's Prepend normalizer: every piece
    unless_marked,       // Metaspace "always": every piece that does not start with a space
    first_unless_marked  // Metaspace "first": the piece at the text's start, unless it starts with a space
  };
  bool byte_fallback = false;
  Mark mark = Mark::never;
  std::array<std::uint32_t, 256> byte_ids{};

  ~Impl() { pcre2_code_free(pattern); }

  // A vocabulary entry: `key` as merges and pieces spell it, `text` what it decodes to.
  void add(std::string key, std::uint32_t id, const std::string& where, std::string text) {
    if (tokens.size() <= id) tokens.resize(std::size_t{id} + 1);
    TZ_CHECK(tokens[id].empty(), FormatError, where + ": id " + std::to_string(id) + " appears twice");
    tokens[id] = std::move(text);
    TZ_CHECK(ranks.emplace(std::move(key), id).second, FormatError, where + ": token of id " + std::to_string(id) + " appears twice");
  }
  void add(std::string bytes, std::uint32_t id, const std::string& where) {
    std::string text = bytes;
    add(std::move(bytes), id, where, std::move(text));
  }

  // Checks the vocabulary and compiles the pre-tokenisation pattern (GPT-2's by default).
  void finish(const std::string& where, const std::string& p = bpe::gpt2_pattern()) {
    if (tokens[eot].empty()) tokens[eot] = std::string(bpe::kEndOfText);
    for (std::size_t id = 0; id < tokens.size(); ++id)
      TZ_CHECK(!tokens[id].empty(), FormatError, where + ": no token has id " + std::to_string(id));
    for (int b = 0; b < 256 && !byte_fallback; ++b)
      TZ_CHECK(ranks.count(std::string(1, static_cast<char>(b))), FormatError,
               where + ": byte " + std::to_string(b) + " has no token (every byte needs one)");
    int code = 0;
    PCRE2_SIZE offset = 0;
    pattern = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(), PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
    TZ_CHECK(pattern, FormatError, where + ": PCRE2 rejects the pre-tokenisation pattern at offset " + std::to_string(offset) +
                                       " (error " + std::to_string(code) + ")");
    pcre2_jit_compile(pattern, PCRE2_JIT_COMPLETE);  // falls back to the interpreter where JIT is unavailable
  }

  std::uint32_t rank(std::string_view s) const {
    const auto it = ranks.find(s);
    return it == ranks.end() ? std::numeric_limits<std::uint32_t>::max() : it->second;
  }

  // tiktoken's byte-pair merge: repeatedly join the adjacent pair whose
  // union has the lowest rank, the leftmost of equals. The parts form a
  // linked list and the candidate pairs a min-heap keyed (rank, start), so
  // a long piece (a run of spaces or digits) costs n log n, not tiktoken's
  // n^2; entries whose parts have changed since are skipped when popped.
  //
  // With tokenizer.json's merges (pair_ranks), Hugging Face's rule instead:
  // the adjacent pair of lowest merge rank joins, leftmost of equals.
  void merge(std::string_view piece, std::vector<std::uint32_t>& out) const {
    constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
    if (const std::uint32_t whole = rank(piece); whole != kNone && (whole_first || piece.size() == 1)) {
      out.push_back(whole);
      return;
    }
    const std::size_t n = piece.size();
    // Scratch reused across calls on this thread (encode stays thread-safe).
    // Part i starts at byte i while alive; next[i] is the start of the part after it (n at the end).
    thread_local std::vector<std::size_t> next, prev;
    thread_local std::vector<char> alive;
    thread_local std::vector<Candidate> heap;
    next.resize(n), prev.resize(n), alive.assign(n, 1), heap.clear();
    for (std::size_t i = 0; i < n; ++i) next[i] = i + 1, prev[i] = i - 1;  // prev[0] wraps: never read
    if (byte_fallback) join_characters(piece, next, prev, alive);
    const auto later = [](const Candidate& a, const Candidate& b) { return a.rank != b.rank ? a.rank > b.rank : a.left > b.left; };
    auto push = [&](std::size_t left) {
      if (left >= n || next[left] >= n) return;
      const std::size_t mid = next[left], end = next[mid];
      std::uint32_t r = kNone;
      if (pair_ranks.empty()) {
        r = rank(piece.substr(left, end - left));
      } else {
        const std::uint64_t key = std::uint64_t{rank(piece.substr(left, mid - left))} << 32 | rank(piece.substr(mid, end - mid));
        const auto it = pair_ranks.find(key);
        if (it != pair_ranks.end()) r = it->second;
      }
      if (r == kNone) return;
      heap.push_back({r, left, end});
      std::push_heap(heap.begin(), heap.end(), later);
    };
    for (std::size_t i = 0; i + 1 < n; ++i) push(i);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      const Candidate c = heap.back();
      heap.pop_back();
      if (!alive[c.left] || next[c.left] >= n || next[next[c.left]] != c.end) continue;  // stale
      alive[next[c.left]] = 0;
      next[c.left] = c.end;
      if (c.end < n) prev[c.end] = c.left;
      push(c.left);
      if (c.left > 0) push(prev[c.left]);
    }
    // A part that is no token is a byte of a character the vocabulary lacks (byte fallback only).
    for (std::size_t i = 0; i < n; i = next[i]) {
      const std::uint32_t id = rank(piece.substr(i, next[i] - i));
      out.push_back(id != kNone ? id : byte_ids[static_cast<unsigned char>(piece[i])]);
    }
  }

  // Byte fallback's first parts: each character the vocabulary holds is one
  // part; the bytes of the others stay parts of their own, and as no token
  // they never pair. `piece` is valid UTF-8.
  void join_characters(std::string_view piece, std::vector<std::size_t>& next, std::vector<std::size_t>& prev,
                       std::vector<char>& alive) const {
    const std::size_t n = piece.size();
    for (std::size_t i = 0; i < n;) {
      const auto lead = static_cast<unsigned char>(piece[i]);
      const std::size_t len = std::min<std::size_t>(n - i, lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4);
      if (len > 1 && rank(piece.substr(i, len)) != std::numeric_limits<std::uint32_t>::max()) {
        for (std::size_t k = 1; k < len; ++k) alive[i + k] = 0;
        next[i] = i + len;
        if (i + len < n) prev[i + len] = i;
      }
      i += len;
    }
  }

  // A piece between added tokens as a byte-fallback vocabulary spells it:
  // spaces as U+2581, and one in front as `mark` says (`first`: the piece
  // starts the text).
  std::string marked(std::string_view piece, bool first) const {
    std::string out;
    out.reserve(piece.size() + piece.size() / 4 + 3);
    for (char c : piece) {
      if (c == ' ') out.append(bpe::kSpaceMark);
      else out.push_back(c);
    }
    const bool unmarked = !out.starts_with(bpe::kSpaceMark);
    if (mark == Mark::always || (unmarked && (mark == Mark::unless_marked || (mark == Mark::first_unless_marked && first))))
      out.insert(0, bpe::kSpaceMark);
    return out;
  }

  // A candidate merge: the two parts spanning [left, end), whose union has `rank`.
  struct Candidate {
    std::uint32_t rank;
    std::size_t left, end;
  };
};

// Loads a Hugging Face tokenizer.json into `t` (hf_tokenizer.cc).
void load_tokenizer_json(BpeTokenizer::Impl& t, const std::filesystem::path& file);
// `text` in Unicode's normalisation form C (ICU's, loaded at run time: hf_tokenizer.cc).
std::string to_nfc(std::string_view text);

}  // namespace tierzero
