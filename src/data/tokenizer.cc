#include "tierzero/tokenizer.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/read_file.h"
#include "data/tokenizer_impl.h"
#include "tierzero/error.h"

namespace tierzero {

namespace fs = std::filesystem;

namespace bpe {
// GPT-2's pre-tokenisation pattern (OpenAI's gpt-2 encoder.py and
// tiktoken's r50k_base). \s is spelled out as Unicode's White_Space
// property, which is what tiktoken's Rust regex means by it (PCRE2's \s
// would leave out U+0085).
std::string gpt2_pattern() {
  const std::string s = std::string("[") + kWhiteSpace + "]", not_s = std::string("[^") + kWhiteSpace + "]";
  return "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" + std::string(kWhiteSpace) + "\\p{L}\\p{N}]+|" + s + "+(?!" + not_s +
         ")|" + s + "+";
}

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

}  // namespace bpe

namespace {
using namespace bpe;

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

}  // namespace

namespace {
void load_encoder_json(BpeTokenizer::Impl& t, const fs::path& encoder, const fs::path& merges) {
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

void load_tiktoken(BpeTokenizer::Impl& t, const fs::path& file) {
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

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpeTokenizer::~BpeTokenizer() = default;
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;

BpeTokenizer BpeTokenizer::load(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  const fs::path p(path);
  std::string where;
  const fs::path json = fs::is_directory(p) ? p / "tokenizer.json" : p;
  if (json.extension() == ".json" && json.filename() != "encoder.json" && fs::exists(json)) {
    load_tokenizer_json(*impl, json);  // compiles its own pattern
    return BpeTokenizer(std::move(impl));
  }
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
             "no tokenizer files at '" + path +
                 "': give a Hugging Face tokenizer.json (or its directory), a directory with encoder.json and vocab.bpe (OpenAI's "
                 "GPT-2 release) or a gpt2.tiktoken ranks file");
    load_tiktoken(*impl, file);
    where = "'" + file.string() + "'";
  }
  impl->finish(where);
  return BpeTokenizer(std::move(impl));
}

std::vector<std::uint32_t> BpeTokenizer::encode(std::string_view input) const {
  const Impl& t = *impl_;
  std::vector<std::uint32_t> out;
  out.reserve(input.size() / 4 + 16);
  const std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> match(
      pcre2_match_data_create_from_pattern(t.pattern, nullptr), pcre2_match_data_free);
  TZ_CHECK(match, Error, "out of memory for PCRE2 match data");
  pcre2_match_data* md = match.get();
  // PCRE2 checks the subject is UTF-8 on a match without PCRE2_NO_UTF_CHECK; every later match skips the check.
  std::uint32_t options = 0;
  auto utf8_error = [&](int rc) {
    TZ_CHECK(rc > PCRE2_ERROR_UTF8_ERR1 || rc < PCRE2_ERROR_UTF8_ERR21, FormatError,
             "text is not valid UTF-8 at byte " + std::to_string(pcre2_get_startchar(md)));
  };
  // NFC, the pieces between added tokens and byte fallback's characters need the whole text checked first.
  if ((t.nfc || !t.added.empty() || t.byte_fallback) && !input.empty()) {
    utf8_error(pcre2_match(t.pattern, reinterpret_cast<PCRE2_SPTR>(input.data()), input.size(), 0, 0, md, nullptr));
    options = PCRE2_NO_UTF_CHECK;
  }
  // The text as the pre-tokenizer sees it: NFC (tokenizer.json's normalizer), then a leading space (add_prefix_space).
  std::string owned;
  std::string_view text = input;
  if (t.nfc) text = owned = to_nfc(input);
  if (t.prefix_space && !text.starts_with(' ')) text = owned = " " + std::string(text);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // Pre-tokenises and merges text[from, to): the pattern's matches and the gaps between them are the pieces.
  auto split = [&](PCRE2_SIZE from, PCRE2_SIZE to) {
    PCRE2_SIZE at = from;
    while (at < to) {
      const int rc = pcre2_match(t.pattern, subject, to, at, options, md, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc <= 0) {
        utf8_error(rc);
        TZ_THROW(Error, "pre-tokenisation failed at byte " + std::to_string(at) + " (PCRE2 error " + std::to_string(rc) + ")");
      }
      options = PCRE2_NO_UTF_CHECK;
      const PCRE2_SIZE* span = pcre2_get_ovector_pointer(md);
      if (span[0] > at) t.merge(text.substr(at, span[0] - at), out);  // a gap: its own piece (Isolated)
      if (span[1] == span[0]) {  // an empty match: step over one character
        PCRE2_SIZE next = span[0] + 1;
        while (next < to && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
        t.merge(text.substr(span[0], next - span[0]), out);
        at = next;
        continue;
      }
      t.merge(text.substr(span[0], span[1] - span[0]), out);
      at = span[1];
    }
    if (at < to) t.merge(text.substr(at, to - at), out);
  };
  // A piece between added tokens: split by the pattern, or (byte fallback) marked and merged whole.
  auto piece = [&](PCRE2_SIZE from, PCRE2_SIZE to) {
    if (!t.byte_fallback) split(from, to);
    else if (from < to) t.merge(t.marked(text.substr(from, to - from), from == 0), out);
  };
  // Added tokens (tokenizer.json's special tokens) are matched first, longest at each position; the text between is split.
  PCRE2_SIZE start = 0;
  for (PCRE2_SIZE i = 0; i < text.size() && !t.added.empty(); ++i) {
    if (!t.added_first[static_cast<unsigned char>(text[i])]) continue;
    for (const auto& [content, id] : t.added) {
      if (text.compare(i, content.size(), content) != 0) continue;
      piece(start, i);
      out.push_back(id);
      start = i + content.size();
      i = start - 1;
      break;
    }
  }
  piece(start, text.size());
  return out;
}

std::string BpeTokenizer::decode(const std::vector<std::uint32_t>& ids) const {
  std::string out;
  for (std::uint32_t id : ids) {
    TZ_CHECK(id < impl_->tokens.size(), ConfigError,
             "token id " + std::to_string(id) + " is outside the tokenizer's vocabulary of " + std::to_string(impl_->tokens.size()));
    out += impl_->tokens[id];
  }
  return out;
}

std::uint32_t BpeTokenizer::vocab() const { return static_cast<std::uint32_t>(impl_->tokens.size()); }
std::uint32_t BpeTokenizer::end_of_text() const { return impl_->eot; }
std::optional<std::uint32_t> BpeTokenizer::begin_of_text() const { return impl_->bos; }
bool BpeTokenizer::adds_begin_of_text() const { return impl_->adds_bos; }
bool BpeTokenizer::byte_fallback() const { return impl_->byte_fallback; }

}  // namespace tierzero
