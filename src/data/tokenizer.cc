#include "tierzero/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "tierzero/error.h"
#include "core/read_file.h"

namespace tierzero {

namespace {
namespace fs = std::filesystem;

// GPT-2's pre-tokenisation pattern (OpenAI's gpt-2 encoder.py and
// tiktoken's r50k_base). \s is spelled out as Unicode's White_Space
// property, which is what tiktoken's Rust regex means by it (PCRE2's \s
// would leave out U+0085).
constexpr const char* kWhiteSpace = R"(\t\n\x{0B}\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

std::string gpt2_pattern() {
  const std::string s = std::string("[") + kWhiteSpace + "]", not_s = std::string("[^") + kWhiteSpace + "]";
  return "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" + std::string(kWhiteSpace) + "\\p{L}\\p{N}]+|" + s + "+(?!" + not_s +
         ")|" + s + "+";
}

constexpr std::string_view kEndOfText = "<|endoftext|>";

// GPT-2's reversible byte <-> printable character map of encoder.json:
// the printable Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand for
// themselves, the other 68 bytes for U+0100, U+0101, ... in byte order.
std::array<char32_t, 256> byte_characters() {
  std::array<char32_t, 256> out{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    out[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return out;
}

// Decodes one encoder.json key (UTF-8 of byte characters) into its bytes;
// false when it holds a character that stands for no byte.
bool key_bytes(const std::string& key, const std::unordered_map<char32_t, unsigned char>& byte_of, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < key.size();) {
    const unsigned char c = static_cast<unsigned char>(key[i]);
    char32_t cp;
    int len;
    if (c < 0x80) cp = c, len = 1;
    else if ((c >> 5) == 6) cp = c & 0x1F, len = 2;
    else if ((c >> 4) == 14) cp = c & 0x0F, len = 3;
    else return false;
    if (i + len > key.size()) return false;
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(key[i + k]) & 0x3F);
    const auto it = byte_of.find(cp);
    if (it == byte_of.end()) return false;
    out.push_back(static_cast<char>(it->second));
    i += len;
  }
  return true;
}

std::string read_text(const fs::path& p) {
  auto text = read_file(p.string());
  TZ_CHECK(text, ConfigError, "cannot read tokenizer file '" + p.string() + "'");
  return std::move(*text);
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool base64_decode(std::string_view s, std::string& out) {
  out.clear();
  if (s.empty() || s.size() % 4 != 0) return false;
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '=') {
      if (i + 2 < s.size() || (i + 1 < s.size() && s[i + 1] != '=')) return false;
      break;
    }
    const int v = base64_value(s[i]);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return !out.empty();
}

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
}  // namespace

struct Gpt2Tokenizer::Impl {
  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> ranks;  // token bytes -> id (no special tokens)
  std::vector<std::string> tokens;  // id -> bytes, <|endoftext|> included
  std::uint32_t eot = 0;
  pcre2_code* pattern = nullptr;

  ~Impl() { pcre2_code_free(pattern); }

  void add(std::string bytes, std::uint32_t id, const std::string& where) {
    if (tokens.size() <= id) tokens.resize(std::size_t{id} + 1);
    TZ_CHECK(tokens[id].empty(), FormatError, where + ": id " + std::to_string(id) + " appears twice");
    tokens[id] = bytes;
    TZ_CHECK(ranks.emplace(std::move(bytes), id).second, FormatError, where + ": token of id " + std::to_string(id) + " appears twice");
  }

  void finish(const std::string& where) {
    for (std::size_t id = 0; id < tokens.size(); ++id)
      TZ_CHECK(!tokens[id].empty() || id == eot, FormatError, where + ": no token has id " + std::to_string(id));
    for (int b = 0; b < 256; ++b)
      TZ_CHECK(ranks.count(std::string(1, static_cast<char>(b))), FormatError,
               where + ": byte " + std::to_string(b) + " has no token (every byte needs one)");
    tokens[eot] = std::string(kEndOfText);
    int code = 0;
    PCRE2_SIZE offset = 0;
    const std::string p = gpt2_pattern();
    pattern = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(), PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
    TZ_CHECK(pattern, Error, "PCRE2 rejected the GPT-2 pattern (error " + std::to_string(code) + ")");
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
  void merge(std::string_view piece, std::vector<std::uint32_t>& out) const {
    constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
    if (const std::uint32_t whole = rank(piece); whole != kNone) {
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
    const auto later = [](const Candidate& a, const Candidate& b) { return a.rank != b.rank ? a.rank > b.rank : a.left > b.left; };
    auto push = [&](std::size_t left) {
      if (left >= n || next[left] >= n) return;
      const std::size_t end = next[next[left]];
      const std::uint32_t r = rank(piece.substr(left, end - left));
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
    for (std::size_t i = 0; i < n; i = next[i]) out.push_back(rank(piece.substr(i, next[i] - i)));
  }

  // A candidate merge: the two parts spanning [left, end), whose union has `rank`.
  struct Candidate {
    std::uint32_t rank;
    std::size_t left, end;
  };
};

namespace {
void load_encoder_json(Gpt2Tokenizer::Impl& t, const fs::path& encoder, const fs::path& merges) {
  const std::string where = "'" + encoder.string() + "'";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text(encoder));
  } catch (const nlohmann::json::exception& e) {
    TZ_THROW(FormatError, where + " is not valid JSON: " + e.what());
  }
  TZ_CHECK(j.is_object() && !j.empty(), FormatError, where + " must be a JSON object of token -> id");
  const auto chars = byte_characters();
  std::unordered_map<char32_t, unsigned char> byte_of;
  for (int b = 0; b < 256; ++b) byte_of[chars[b]] = static_cast<unsigned char>(b);
  std::string bytes;
  bool has_eot = false;
  for (auto& [key, value] : j.items()) {
    TZ_CHECK(value.is_number_unsigned() && value.get<std::uint64_t>() < (1u << 24), FormatError,
             where + ": id of '" + key + "' must be an integer below 2^24");
    const auto id = value.get<std::uint32_t>();
    if (key == kEndOfText) {
      t.eot = id, has_eot = true;
      continue;
    }
    TZ_CHECK(key_bytes(key, byte_of, bytes) && !bytes.empty(), FormatError,
             where + ": '" + key + "' is not a GPT-2 byte-encoded token");
    t.add(bytes, id, where);
  }
  TZ_CHECK(has_eot, FormatError, where + " has no <|endoftext|>");
  TZ_CHECK(t.eot + 1 >= t.tokens.size(), FormatError, where + ": <|endoftext|> must have the last id");
  t.tokens.resize(std::size_t{t.eot} + 1);
  // vocab.bpe lists the merges in rank order: merge k joins two tokens into
  // the one encoder.json numbers 256 + k (tiktoken checks the same).
  const std::string mwhere = "'" + merges.string() + "'";
  std::istringstream in(read_text(merges));
  std::string line, a, b;
  std::size_t number = 0, k = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const std::size_t space = line.find(' ');
    TZ_CHECK(space != std::string::npos && space > 0 && space + 1 < line.size() && line.find(' ', space + 1) == std::string::npos,
             FormatError, mwhere + " line " + std::to_string(number) + ": expected two tokens separated by one space");
    std::string left, right;
    TZ_CHECK(key_bytes(line.substr(0, space), byte_of, left) && key_bytes(line.substr(space + 1), byte_of, right), FormatError,
             mwhere + " line " + std::to_string(number) + ": not GPT-2 byte-encoded tokens");
    TZ_CHECK(t.rank(left + right) == 256 + k, FormatError,
             mwhere + " line " + std::to_string(number) + " merges into a token that " + where + " does not number " +
                 std::to_string(256 + k) + " (the files are not a matching pair)");
    ++k;
  }
  TZ_CHECK(256 + k == t.eot, FormatError,
           mwhere + " has " + std::to_string(k) + " merges; " + where + " needs " + std::to_string(t.eot - 256) + " (256 bytes + merges + <|endoftext|>)");
}

void load_tiktoken(Gpt2Tokenizer::Impl& t, const fs::path& file) {
  const std::string where = "'" + file.string() + "'";
  std::istringstream in(read_text(file));
  std::string line, bytes;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    const std::size_t space = line.find(' ');
    std::uint64_t id = 0;
    bool ok = space != std::string::npos && base64_decode(std::string_view(line).substr(0, space), bytes) && space + 1 < line.size();
    for (std::size_t i = space + 1; ok && i < line.size(); ++i) {
      ok = line[i] >= '0' && line[i] <= '9' && id < (1u << 24);
      id = id * 10 + static_cast<std::uint64_t>(line[i] - '0');
    }
    TZ_CHECK(ok && id < (1u << 24), FormatError, where + " line " + std::to_string(number) + ": expected 'BASE64-TOKEN RANK'");
    t.add(bytes, static_cast<std::uint32_t>(id), where);
  }
  TZ_CHECK(!t.tokens.empty(), FormatError, where + " holds no tokens");
  // tiktoken's gpt2 encoding adds <|endoftext|> after the ranks.
  t.eot = static_cast<std::uint32_t>(t.tokens.size());
  t.tokens.resize(t.tokens.size() + 1);
}
}  // namespace

Gpt2Tokenizer::Gpt2Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gpt2Tokenizer::~Gpt2Tokenizer() = default;
Gpt2Tokenizer::Gpt2Tokenizer(Gpt2Tokenizer&&) noexcept = default;
Gpt2Tokenizer& Gpt2Tokenizer::operator=(Gpt2Tokenizer&&) noexcept = default;

Gpt2Tokenizer Gpt2Tokenizer::load(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  const fs::path p(path);
  std::string where;
  if (fs::is_directory(p) && fs::exists(p / "encoder.json") && fs::exists(p / "vocab.bpe")) {
    load_encoder_json(*impl, p / "encoder.json", p / "vocab.bpe");
    where = "'" + (p / "encoder.json").string() + "'";
  } else {
    fs::path file = p;
    if (fs::is_directory(p)) {
      file.clear();
      for (const auto& e : fs::directory_iterator(p))
        if (e.path().extension() == ".tiktoken") file = e.path();
    }
    TZ_CHECK(!file.empty() && fs::is_regular_file(file), ConfigError,
             "no GPT-2 tokenizer files at '" + path +
                 "': give a directory with encoder.json and vocab.bpe (OpenAI's GPT-2 release) or a gpt2.tiktoken ranks file");
    load_tiktoken(*impl, file);
    where = "'" + file.string() + "'";
  }
  impl->finish(where);
  return Gpt2Tokenizer(std::move(impl));
}

std::vector<std::uint32_t> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<std::uint32_t> out;
  out.reserve(text.size() / 4 + 16);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(impl_->pattern, nullptr);
  TZ_CHECK(md, Error, "out of memory for PCRE2 match data");
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  PCRE2_SIZE at = 0;
  std::uint32_t options = 0;  // the first match checks the whole text is UTF-8, the rest skip the check
  while (at < text.size()) {
    const int rc = pcre2_match(impl_->pattern, subject, text.size(), at, options, md, nullptr);
    if (rc <= 0) {
      const PCRE2_SIZE bad = pcre2_get_startchar(md);
      pcre2_match_data_free(md);
      TZ_CHECK(rc > PCRE2_ERROR_UTF8_ERR1 || rc < PCRE2_ERROR_UTF8_ERR21, FormatError,
               "text is not valid UTF-8 at byte " + std::to_string(bad));
      TZ_THROW(Error, "GPT-2 pre-tokenisation failed at byte " + std::to_string(at) + " (PCRE2 error " + std::to_string(rc) + ")");
    }
    options = PCRE2_NO_UTF_CHECK;
    const PCRE2_SIZE* span = pcre2_get_ovector_pointer(md);
    impl_->merge(text.substr(span[0], span[1] - span[0]), out);
    at = span[1];
  }
  pcre2_match_data_free(md);
  return out;
}

std::string Gpt2Tokenizer::decode(const std::vector<std::uint32_t>& ids) const {
  std::string out;
  for (std::uint32_t id : ids) {
    TZ_CHECK(id < impl_->tokens.size(), ConfigError,
             "token id " + std::to_string(id) + " is outside the GPT-2 vocabulary of " + std::to_string(impl_->tokens.size()));
    out += impl_->tokens[id];
  }
  return out;
}

std::uint32_t Gpt2Tokenizer::vocab() const { return static_cast<std::uint32_t>(impl_->tokens.size()); }
std::uint32_t Gpt2Tokenizer::end_of_text() const { return impl_->eot; }

}  // namespace tierzero
