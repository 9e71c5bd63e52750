// Hugging Face tokenizer.json (the `tokenizers` library's format) for BPE:
// byte-level (GPT-2's, Llama 3's, Qwen2/3's) and byte-fallback (Llama 2's,
// Mistral's). What is read: the BPE model (vocab, merges in either
// spelling, ignore_merges, byte_fallback), the added tokens, the
// pre-tokenizer (ByteLevel with GPT-2's pattern, a Split pattern Isolated
// followed by ByteLevel, or a Metaspace that does not split), the NFC
// normalizer or Llama 2's Prepend + Replace, and the token a
// TemplateProcessing post-processor puts first. Anything else is refused
// by name, so no file is tokenised otherwise than its library would.
#include <dlfcn.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "data/tokenizer_impl.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {
using nlohmann::json;

// The pattern of a Split pre-tokenizer, for PCRE2 with UCP: Oniguruma's
// \s and \S (Unicode White_Space) spelled out, inside and outside classes.
std::string translate_pattern(const std::string& p, const std::string& where) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[++i];
      if (e == 's') out += in_class ? std::string(bpe::kWhiteSpace) : "[" + std::string(bpe::kWhiteSpace) + "]";
      else if (e == 'S' && !in_class) out += "[^" + std::string(bpe::kWhiteSpace) + "]";
      else {
        TZ_CHECK(e != 'S', FormatError, where + ": \\S inside a character class is not supported");
        out += c, out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) in_class = true;
    else if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

std::string at_key(const std::string& where, const std::string& key) { return where + ": key '" + key + "'"; }

bool is_null_or(const json& j, const char* key, const json& allowed) {
  return !j.contains(key) || j.at(key).is_null() || j.at(key) == allowed;
}

// The pre-tokenizer's pattern and whether a space goes before the text.
std::pair<std::string, bool> pre_tokenizer(const json& pt, const std::string& where) {
  auto byte_level = [&](const json& b, bool own_regex) {
    TZ_CHECK(b.value("use_regex", true) == own_regex, FormatError,
             at_key(where, "pre_tokenizer") + ": ByteLevel's use_regex must be " + (own_regex ? "true alone" : "false after a Split"));
    return b.value("add_prefix_space", false);
  };
  const std::string type = pt.is_object() ? pt.value("type", "") : "";
  if (type == "ByteLevel") return {bpe::gpt2_pattern(), byte_level(pt, true)};
  TZ_CHECK(type == "Sequence" && pt.contains("pretokenizers") && pt.at("pretokenizers").is_array() && pt.at("pretokenizers").size() == 2,
           FormatError, at_key(where, "pre_tokenizer") + " must be ByteLevel, or a Sequence of a Split and a ByteLevel (got " + pt.dump().substr(0, 80) + ")");
  const json& split = pt.at("pretokenizers").at(0);
  const json& bl = pt.at("pretokenizers").at(1);
  TZ_CHECK(split.value("type", "") == "Split" && bl.value("type", "") == "ByteLevel", FormatError,
           at_key(where, "pre_tokenizer") + ": a Sequence of Split then ByteLevel is supported");
  TZ_CHECK(split.value("behavior", "") == "Isolated" && !split.value("invert", false), FormatError,
           at_key(where, "pre_tokenizer.Split") + ": behavior must be Isolated (not inverted)");
  TZ_CHECK(split.contains("pattern") && split.at("pattern").is_object() && split.at("pattern").contains("Regex") &&
               split.at("pattern").at("Regex").is_string(),
           FormatError, at_key(where, "pre_tokenizer.Split.pattern") + " must be {\"Regex\": ...}");
  const bool prefix = byte_level(bl, false);
  return {translate_pattern(split.at("pattern").at("Regex").get<std::string>(), where), prefix};
}

// Byte fallback's space marks: Llama 2's normalizer (transformers' legacy
// conversion: a Sequence of Prepend "▁", when it adds a prefix space, and
// Replace " " -> "▁") with no pre-tokenizer, or (its non-legacy one,
// Mistral v0.3's) no normalizer and a Metaspace "▁" that does not split.
BpeTokenizer::Impl::Mark space_marks(const json& j, const std::string& where) {
  using Mark = BpeTokenizer::Impl::Mark;
  const json norm = j.value("normalizer", json()), pre = j.value("pre_tokenizer", json());
  const std::string mark(bpe::kSpaceMark);
  if (!norm.is_null()) {
    TZ_CHECK(pre.is_null(), FormatError,
             at_key(where, "pre_tokenizer") + " must be null beside a normalizer in a byte-fallback tokenizer (got " + pre.dump().substr(0, 80) + ")");
    const json parts = norm.value("type", "") == "Sequence" ? norm.value("normalizers", json::array()) : json::array({norm});
    const json replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", mark}};
    const json prepend = {{"type", "Prepend"}, {"prepend", mark}};
    TZ_CHECK(!parts.empty() && parts.back() == replace && (parts.size() == 1 || (parts.size() == 2 && parts.front() == prepend)),
             FormatError,
             at_key(where, "normalizer") + " of a byte-fallback tokenizer must be Llama 2's: Prepend \"\u2581\" (optional) then Replace \" \" "
                                           "with \"\u2581\" (got " + norm.dump().substr(0, 120) + ")");
    return parts.size() == 2 ? Mark::always : Mark::never;
  }
  TZ_CHECK(pre.is_object() && pre.value("type", "") == "Metaspace", FormatError,
           at_key(where, "pre_tokenizer") + " of a byte-fallback tokenizer must be Metaspace, or null beside Llama 2's normalizer (got " +
               pre.dump().substr(0, 80) + ")");
  TZ_CHECK(pre.value("replacement", mark) == mark && pre.value("str_rep", mark) == mark, FormatError,
           at_key(where, "pre_tokenizer.replacement") + " must be \"\u2581\"");
  // Hugging Face's Rust library splits at each mark unless split is false; its JavaScript one never does: only false means one thing.
  TZ_CHECK(pre.contains("split") && pre.at("split") == false, FormatError,
           at_key(where, "pre_tokenizer.split") + " must be false (a Metaspace that splits at spaces is not supported)");
  // Without prepend_scheme the Rust library reads add_prefix_space (false: never) and the JavaScript one takes "always".
  TZ_CHECK(pre.contains("prepend_scheme") || pre.value("add_prefix_space", true), FormatError,
           at_key(where, "pre_tokenizer") + ": add_prefix_space false without a prepend_scheme is not supported (give prepend_scheme)");
  const std::string scheme = pre.value("prepend_scheme", "always");
  if (scheme == "always") return Mark::unless_marked;
  if (scheme == "first") return Mark::first_unless_marked;
  TZ_CHECK(scheme == "never", FormatError, at_key(where, "pre_tokenizer.prepend_scheme") + " must be always, first or never, got '" + scheme + "'");
  return Mark::never;
}

// The token a TemplateProcessing post-processor (alone or in a Sequence)
// puts before a single text, if any; other post-processors add none.
std::optional<std::uint32_t> template_bos(const json& pp, const std::string& where) {
  if (!pp.is_object()) return std::nullopt;
  if (pp.value("type", "") == "Sequence") {
    for (const json& p : pp.value("processors", json::array()))
      if (auto id = template_bos(p, where)) return id;
    return std::nullopt;
  }
  if (pp.value("type", "") != "TemplateProcessing") return std::nullopt;
  const json single = pp.value("single", json::array());
  TZ_CHECK(single.is_array(), FormatError, at_key(where, "post_processor.single") + " must be an array");
  if (single.empty() || !single.at(0).contains("SpecialToken")) return std::nullopt;
  TZ_CHECK(single.size() >= 2 && single.at(1).contains("Sequence"), FormatError,
           at_key(where, "post_processor.single") + ": one special token before the text is supported");
  const std::string name = single.at(0).at("SpecialToken").at("id").get<std::string>();
  const json ids = pp.at("special_tokens").at(name).at("ids");
  TZ_CHECK(ids.is_array() && ids.size() == 1 && ids.at(0).is_number_unsigned(), FormatError,
           at_key(where, "post_processor.special_tokens") + ": '" + name + "' must have one id");
  return ids.at(0).get<std::uint32_t>();
}

// A vocabulary key or merge part as bytes: byte-level keys decoded, byte-fallback keys as they are.
bool vocab_key(const BpeTokenizer::Impl& t, const std::string& key, const std::unordered_map<char32_t, unsigned char>& byte_of,
               std::string& out) {
  if (!t.byte_fallback) return bpe::key_bytes(key, byte_of, out);
  out = key;
  return !key.empty();
}

// The byte a byte-fallback token <0xXX> stands for, or -1.
int fallback_byte(const std::string& key) {
  if (key.size() != 6 || key.compare(0, 3, "<0x") != 0 || key[5] != '>') return -1;
  int b = 0;
  for (char c : key.substr(3, 2)) {
    const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (v < 0) return -1;
    b = b * 16 + v;
  }
  return b;
}

// What a byte-fallback key decodes to: its byte, or its text with the space marks as spaces.
std::string fallback_text(const std::string& key) {
  if (const int b = fallback_byte(key); b >= 0) return std::string(1, static_cast<char>(b));
  std::string out;
  for (std::size_t at = 0, mark; at < key.size(); at = mark + bpe::kSpaceMark.size()) {
    mark = std::min(key.find(bpe::kSpaceMark, at), key.size());
    out.append(key, at, mark - at);
    if (mark < key.size()) out += ' ';
  }
  return out;
}

void read_tokenizer(BpeTokenizer::Impl& t, const json& j, const std::string& where) {
  TZ_CHECK(j.is_object() && j.contains("model") && j.at("model").is_object(), FormatError, where + " has no 'model' object");
  const json& m = j.at("model");
  const std::string type = m.value("type", "");
  TZ_CHECK(!type.empty(), FormatError, at_key(where, "model.type") + " is missing");
  TZ_CHECK(type == "BPE", FormatError,
           where + ": model type '" + type +
               "' is not supported; tierzero reads BPE tokenizers (byte-level, as GPT-2, Llama 3 and Qwen ship them, and byte-fallback, "
               "as Llama 2 and Mistral do)");
  t.byte_fallback = m.value("byte_fallback", false);
  // Byte fallback names an unknown token (never used: every byte has a token) and may fuse it.
  TZ_CHECK(is_null_or(m, "dropout", nullptr) && (t.byte_fallback || is_null_or(m, "unk_token", nullptr)) &&
               is_null_or(m, "continuing_subword_prefix", "") && is_null_or(m, "end_of_word_suffix", "") &&
               (t.byte_fallback || !m.value("fuse_unk", false)),
           FormatError, at_key(where, "model") + ": dropout, subword prefixes and suffixes, and unk_token without byte_fallback are not supported");
  t.whole_first = m.value("ignore_merges", false);
  std::string pattern = "(?s).+";  // byte fallback: a piece is the whole text between added tokens (the pattern only checks UTF-8)
  if (t.byte_fallback) {
    t.mark = space_marks(j, where);
  } else {
    // The normalizer: none or NFC.
    if (j.contains("normalizer") && !j.at("normalizer").is_null()) {
      TZ_CHECK(j.at("normalizer").value("type", "") == "NFC", FormatError, at_key(where, "normalizer") + " must be null or NFC");
      t.nfc = true;
    }
    std::tie(pattern, t.prefix_space) = pre_tokenizer(j.value("pre_tokenizer", json()), where);
  }
  // The vocabulary: keys (byte-level characters, or byte-fallback text) -> ids.
  TZ_CHECK(m.contains("vocab") && m.at("vocab").is_object(), FormatError, at_key(where, "model.vocab") + " must be an object");
  const auto chars = bpe::byte_characters();
  std::unordered_map<char32_t, unsigned char> byte_of;
  for (int b = 0; b < 256; ++b) byte_of[chars[b]] = static_cast<unsigned char>(b);
  std::array<bool, 256> have_byte{};
  std::string bytes;
  for (auto& [key, value] : m.at("vocab").items()) {
    TZ_CHECK(value.is_number_unsigned() && value.get<std::uint64_t>() < (1u << 24), FormatError,
             at_key(where, "model.vocab") + ": id of '" + key + "' must be an integer below 2^24");
    TZ_CHECK(vocab_key(t, key, byte_of, bytes), FormatError, at_key(where, "model.vocab") + ": '" + key + "' is not a byte-level token");
    const auto id = value.get<std::uint32_t>();
    if (!t.byte_fallback) {
      t.add(bytes, id, where);
      continue;
    }
    t.add(bytes, id, where, fallback_text(key));
    if (const int b = fallback_byte(key); b >= 0) t.byte_ids[b] = id, have_byte[b] = true;
  }
  for (int b = 0; b < 256 && t.byte_fallback; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    TZ_CHECK(have_byte[b], FormatError, at_key(where, "model.vocab") + ": byte_fallback needs the 256 tokens <0x00> to <0xFF>; " + name + " is missing");
  }
  // Merges, "a b" or ["a", "b"], in rank order.
  TZ_CHECK(m.contains("merges") && m.at("merges").is_array(), FormatError, at_key(where, "model.merges") + " must be an array");
  std::uint32_t rank = 0;
  std::string left, right;
  for (const json& e : m.at("merges")) {
    std::string a, b;
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const std::size_t space = s.find(' ');
      TZ_CHECK(space != std::string::npos && s.find(' ', space + 1) == std::string::npos, FormatError,
               at_key(where, "model.merges") + ": merge " + std::to_string(rank) + " is not two tokens");
      a = s.substr(0, space), b = s.substr(space + 1);
    } else {
      TZ_CHECK(e.is_array() && e.size() == 2 && e.at(0).is_string() && e.at(1).is_string(), FormatError,
               at_key(where, "model.merges") + ": merge " + std::to_string(rank) + " is not two tokens");
      a = e.at(0).get<std::string>(), b = e.at(1).get<std::string>();
    }
    TZ_CHECK(vocab_key(t, a, byte_of, left) && vocab_key(t, b, byte_of, right), FormatError,
             at_key(where, "model.merges") + ": merge " + std::to_string(rank) + " is not byte-level tokens");
    const std::uint32_t l = t.rank(left), r = t.rank(right), u = t.rank(left + right);
    TZ_CHECK(l != std::numeric_limits<std::uint32_t>::max() && r != std::numeric_limits<std::uint32_t>::max() &&
                 u != std::numeric_limits<std::uint32_t>::max(),
             FormatError, at_key(where, "model.merges") + ": merge " + std::to_string(rank) + " ('" + a + " " + b + "') joins tokens the vocabulary lacks");
    t.pair_ranks.emplace(std::uint64_t{l} << 32 | r, rank++);
  }
  // Added tokens: matched in the text as they are, before splitting.
  const bool normalizer = j.contains("normalizer") && !j.at("normalizer").is_null();
  if (j.contains("added_tokens")) {
    TZ_CHECK(j.at("added_tokens").is_array(), FormatError, at_key(where, "added_tokens") + " must be an array");
    for (const json& a : j.at("added_tokens")) {
      TZ_CHECK(a.is_object() && a.contains("id") && a.at("id").is_number_unsigned() && a.contains("content") && a.at("content").is_string(),
               FormatError, at_key(where, "added_tokens") + ": each needs an id and a content");
      TZ_CHECK(!a.value("lstrip", false) && !a.value("rstrip", false) && !a.value("single_word", false), FormatError,
               at_key(where, "added_tokens") + ": '" + a.at("content").get<std::string>() + "' strips or matches single words (not supported)");
      // Hugging Face matches a token marked normalized in the normalized text: Llama 2's normalizer would mark it too.
      TZ_CHECK(!t.byte_fallback || !normalizer || !a.value("normalized", !a.value("special", false)), FormatError,
               at_key(where, "added_tokens") + ": '" + a.at("content").get<std::string>() + "' is matched after the normalizer (not supported)");
      const auto id = a.at("id").get<std::uint32_t>();
      const std::string content = a.at("content").get<std::string>();
      TZ_CHECK(!content.empty() && id < (1u << 24), FormatError, at_key(where, "added_tokens") + ": an empty token or an id above 2^24");
      if (t.tokens.size() <= id) t.tokens.resize(std::size_t{id} + 1);
      if (t.tokens[id].empty()) t.tokens[id] = content;  // an added token may also be in the vocabulary, as itself
      TZ_CHECK(t.tokens[id] == content, FormatError,
               at_key(where, "added_tokens") + ": '" + content + "' has id " + std::to_string(id) + ", which is already '" + t.tokens[id] + "'");
      t.added.emplace_back(content, id);
      t.added_first[static_cast<unsigned char>(content[0])] = true;
    }
    std::stable_sort(t.added.begin(), t.added.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  }
  // The document separator: GPT-2's and Qwen's <|endoftext|>, Llama 3's <|end_of_text|>, Llama 2's and Mistral's </s>.
  bool found = false;
  for (const char* name : {"<|endoftext|>", "<|end_of_text|>", "</s>"})
    for (const auto& [content, id] : t.added)
      if (!found && content == name) t.eot = id, found = true;
  TZ_CHECK(found, FormatError, where + " has no <|endoftext|>, <|end_of_text|> or </s> added token (the document separator)");
  // The begin-of-text token: the one the post-processor puts first, else an added <s> or <|begin_of_text|>.
  t.bos = template_bos(j.value("post_processor", json()), where);
  t.adds_bos = t.bos.has_value();
  for (const auto& [content, id] : t.added)
    if (!t.bos && (content == "<s>" || content == "<|begin_of_text|>")) t.bos = id;
  t.finish(where, pattern);
  TZ_CHECK(!t.bos || *t.bos < t.tokens.size(), FormatError, at_key(where, "post_processor") + ": the token before a text has no id in the vocabulary");
}
}  // namespace

void load_tokenizer_json(BpeTokenizer::Impl& t, const std::filesystem::path& file) {
  const std::string where = "'" + file.string() + "'";
  json j;
  try {
    j = json::parse(bpe::read_text(file));
  } catch (const json::exception& e) {
    TZ_THROW(FormatError, where + " is not valid JSON: " + e.what());
  }
  try {
    read_tokenizer(t, j, where);
  } catch (const json::exception& e) {  // a key of the wrong type
    TZ_THROW(FormatError, where + ": malformed tokenizer.json (" + e.what() + ")");
  }
}

namespace {
// ICU's C API (unorm2.h, ustring.h), looked up at run time so that tierzero
// does not link ICU: its symbols carry the library's major version
// (unorm2_normalize_72). Error codes: > 0 fails, 15 is U_BUFFER_OVERFLOW_ERROR.
struct Icu {
  using GetNfc = const void* (*)(int*);
  using Normalize = int (*)(const void*, const char16_t*, int, char16_t*, int, int*);
  using FromUtf8 = char16_t* (*)(char16_t*, int, int*, const char*, int, int*);
  using ToUtf8 = char* (*)(char*, int, int*, const char16_t*, int, int*);
  GetNfc get_nfc = nullptr;
  Normalize normalize = nullptr;
  FromUtf8 from_utf8 = nullptr;
  ToUtf8 to_utf8 = nullptr;
  std::string missing;

  Icu() {
    void* lib = nullptr;
    int version = 0;
    for (int v = 90; v >= 50 && !lib; --v)
      if ((lib = dlopen(("libicuuc.so." + std::to_string(v)).c_str(), RTLD_NOW | RTLD_LOCAL))) version = v;
    if (!lib) lib = dlopen("libicuuc.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      missing = "ICU (libicuuc) is not installed (Debian: libicu72)";
      return;
    }
    for (const std::string& suffix : {"_" + std::to_string(version), std::string()}) {
      auto find = [&](const char* name) { return dlsym(lib, (name + suffix).c_str()); };
      get_nfc = reinterpret_cast<GetNfc>(find("unorm2_getNFCInstance"));
      normalize = reinterpret_cast<Normalize>(find("unorm2_normalize"));
      from_utf8 = reinterpret_cast<FromUtf8>(find("u_strFromUTF8"));
      to_utf8 = reinterpret_cast<ToUtf8>(find("u_strToUTF8"));
      if (get_nfc && normalize && from_utf8 && to_utf8) return;
    }
    missing = "libicuuc lacks unorm2_normalize or u_strFromUTF8";
  }
};

// Runs an ICU call that writes into a buffer of `Out`, sized by a first try and again when ICU says it overflowed.
template <class Out, class Call>
std::basic_string<Out> icu_call(std::size_t guess, const char* what, Call call) {
  std::basic_string<Out> out(guess + 16, Out{});
  int status = 0, n = call(out.data(), static_cast<int>(out.size()), &status);
  if (status == 15) {
    status = 0;
    out.assign(static_cast<std::size_t>(n), Out{});
    n = call(out.data(), static_cast<int>(out.size()), &status);
  }
  TZ_CHECK(status <= 0, Error, std::string("ICU: ") + what + " failed (error " + std::to_string(status) + ")");
  out.resize(static_cast<std::size_t>(n));
  return out;
}
}  // namespace

std::string to_nfc(std::string_view text) {
  static const Icu icu;
  TZ_CHECK(icu.missing.empty(), ConfigError, "this tokenizer normalises text to NFC, which needs ICU: " + icu.missing);
  TZ_CHECK(text.size() < (1u << 30), ConfigError, "a text to normalise must be under 1 GiB");
  int status = 0;
  const void* norm = icu.get_nfc(&status);
  TZ_CHECK(status <= 0 && norm, Error, "ICU: no NFC normaliser (error " + std::to_string(status) + ")");
  const int n = static_cast<int>(text.size());
  const std::u16string in = icu_call<char16_t>(text.size(), "UTF-8 decoding", [&](char16_t* out, int cap, int* st) {
    int len = 0;
    icu.from_utf8(out, cap, &len, text.data(), n, st);
    return len;
  });
  const std::u16string nfc = icu_call<char16_t>(in.size(), "NFC normalisation", [&](char16_t* out, int cap, int* st) {
    return icu.normalize(norm, in.data(), static_cast<int>(in.size()), out, cap, st);
  });
  return icu_call<char>(text.size(), "UTF-8 encoding", [&](char* out, int cap, int* st) {
    int len = 0;
    icu.to_utf8(out, cap, &len, nfc.data(), static_cast<int>(nfc.size()), st);
    return len;
  });
}

}  // namespace tierzero
