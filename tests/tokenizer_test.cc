// Byte-level BPE: a toy vocabulary whose merges are worked out by hand,
// OpenAI's real GPT-2 vocabulary (fetched by scripts/gpt2_vocab.sh into
// .cache/gpt2) against ids from an independent implementation (js-tiktoken;
// tests/golden/make_bpe_golden.sh), and Hugging Face tokenizer.json files
// (Llama 3's and Qwen3's, fetched by scripts/hf_tokenizers.sh) against
// @huggingface/tokenizers (tests/golden/make_hf_tokenizer_golden.sh), exactly.
#include <gtest/gtest.h>


#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tierzero/error.h"
#include "tierzero/tokenizer.h"

namespace tierzero {
namespace {
namespace fs = std::filesystem;

std::string base64(const std::string& bytes) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 2]);
    out += abc[(v >> 18) & 63];
    out += abc[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? abc[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? abc[v & 63] : '=';
  }
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("tz_tok_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

// Bytes 0..255 are ids 0..255; then the merges below, in rank order.
fs::path write_toy_ranks(const TempDir& dir, const std::vector<std::string>& merges) {
  const fs::path file = dir.path() / "toy.tiktoken";
  std::ofstream out(file);
  for (int b = 0; b < 256; ++b) out << base64(std::string(1, static_cast<char>(b))) << ' ' << b << '\n';
  for (std::size_t k = 0; k < merges.size(); ++k) out << base64(merges[k]) << ' ' << 256 + k << '\n';
  return file;
}

TEST(BpeTokenizer, MergesTheLowestRankedPairFirst) {
  TempDir dir;
  // "ab" (256) outranks "bc" (257), so "abc" becomes ab + c, never a + bc;
  // "abc" (258) then joins them. "cd" is only reachable from c + d.
  const BpeTokenizer t = BpeTokenizer::load(write_toy_ranks(dir, {"ab", "bc", "abc", "cd", " a"}).string());
  EXPECT_EQ(t.vocab(), 256u + 5 + 1);
  EXPECT_EQ(t.end_of_text(), 261u);
  EXPECT_EQ(t.encode("abc"), (std::vector<std::uint32_t>{258}));
  EXPECT_EQ(t.encode("bcd"), (std::vector<std::uint32_t>{257, 'd'}));  // bc outranks cd
  EXPECT_EQ(t.encode("cd"), (std::vector<std::uint32_t>{259}));
  // " abc" is one piece (" ?\p{L}+"): ab (256) goes first, so " a" (260)
  // can no longer form; then abc (258).
  EXPECT_EQ(t.encode(" abc"), (std::vector<std::uint32_t>{' ', 258}));
  EXPECT_EQ(t.encode(" a"), (std::vector<std::uint32_t>{260}));
  // Contractions, digits and punctuation are separate pieces: never merged across.
  EXPECT_EQ(t.encode("ab's12!!"), (std::vector<std::uint32_t>{256, '\'', 's', '1', '2', '!', '!'}));
  // Whitespace: a run before a word leaves its last space to the word.
  EXPECT_EQ(t.encode("a   b"), (std::vector<std::uint32_t>{'a', ' ', ' ', ' ', 'b'}));
  EXPECT_EQ(t.decode({258, ' ', 259, 261}), "abc cd<|endoftext|>");
  EXPECT_THROW(t.decode({262}), ConfigError);
}

TEST(BpeTokenizer, UnicodeWhiteSpaceSplitsAsTiktokensDoes) {
  TempDir dir;
  // "!" + C2 -> 256, then + 85 -> 257: "!\u0085" as one token, if it were one piece.
  const BpeTokenizer t = BpeTokenizer::load(write_toy_ranks(dir, {"!\xC2", "!\xC2\x85", "!\xE2", "!\xE2\x80", "!\xE2\x80\x8B"}).string());
  // U+0085 is White_Space (tiktoken's Rust \s), so it ends the punctuation
  // piece; JavaScript's \s lacks it and would give one piece, id 257.
  EXPECT_EQ(t.encode("!\xC2\x85"), (std::vector<std::uint32_t>{'!', 0xC2, 0x85}));
  // U+200B (zero-width space) is not White_Space: one piece, one token.
  EXPECT_EQ(t.encode("!\xE2\x80\x8B"), (std::vector<std::uint32_t>{260}));
  // A run of White_Space before a word leaves its last character to the word.
  EXPECT_EQ(t.encode("\xE3\x80\x80\xE3\x80\x80x").size(), 7u);  // U+3000 U+3000 x: 3 + 3 + 1 bytes
}

TEST(BpeTokenizer, RejectsBadInput) {
  TempDir dir;
  const BpeTokenizer t = BpeTokenizer::load(write_toy_ranks(dir, {"ab"}).string());
  try {
    t.encode("ok \xFF\xFE no");
    FAIL() << "invalid UTF-8 was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find("not valid UTF-8 at byte 3"), std::string::npos) << e.message();
  }
  TempDir empty;
  try {
    BpeTokenizer::load(empty.path().string());
    FAIL() << "an empty directory was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("encoder.json and vocab.bpe"), std::string::npos) << e.message();
  }
  std::ofstream(dir.path() / "bad.tiktoken") << "YQ== 0\nnot base64! 1\n";
  try {
    BpeTokenizer::load((dir.path() / "bad.tiktoken").string());
    FAIL() << "a malformed ranks file was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find("line 2: expected 'BASE64-TOKEN RANK'"), std::string::npos) << e.message();
  }
  std::ofstream(dir.path() / "short.tiktoken") << "YQ== 0\nYg== 1\n";
  EXPECT_THROW(BpeTokenizer::load((dir.path() / "short.tiktoken").string()), FormatError);  // bytes without tokens
}

// OpenAI's vocabulary, when scripts/gpt2_vocab.sh could fetch it.
const char* vocab_dir() {
  static const std::string d = std::string(TZ_CACHE_DIR) + "/gpt2";
  return fs::exists(fs::path(d) / "encoder.json") && fs::exists(fs::path(d) / "vocab.bpe") ? d.c_str() : nullptr;
}

std::vector<std::uint32_t> golden_ids() {
  const std::string raw = read(fs::path(TZ_GOLDEN_DIR) / "bpe_ids.u16");
  std::vector<std::uint32_t> ids(raw.size() / 2);
  for (std::size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<unsigned char>(raw[2 * i]) | static_cast<std::uint32_t>(static_cast<unsigned char>(raw[2 * i + 1])) << 8;
  return ids;
}

void expect_golden(const BpeTokenizer& t, const std::string& text, const std::vector<std::uint32_t>& want) {
  const std::vector<std::uint32_t> got = t.encode(text);
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  if (i == got.size() && i == want.size()) return;
  const std::vector<std::uint32_t> before(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(i));
  const std::size_t at = t.decode(before).size();
  ADD_FAILURE() << "ids differ from js-tiktoken's at id " << i << " of " << want.size() << " (got " << got.size()
                << " ids), text byte " << at << ": '" << text.substr(at, 40) << "'";
}

TEST(BpeTokenizer, MatchesJsTiktokenOnTheGoldenText) {
  if (!vocab_dir()) GTEST_SKIP() << "OpenAI's GPT-2 vocabulary is not in .cache/gpt2 (scripts/gpt2_vocab.sh could not fetch it)";
  const BpeTokenizer t = BpeTokenizer::load(vocab_dir());
  EXPECT_EQ(t.vocab(), 50257u);
  EXPECT_EQ(t.end_of_text(), 50256u);
  EXPECT_EQ(t.encode("Hello world"), (std::vector<std::uint32_t>{15496, 995}));
  const std::string text = read(fs::path(TZ_GOLDEN_DIR) / "bpe_input.txt");
  const std::vector<std::uint32_t> want = golden_ids();
  ASSERT_GT(want.size(), 100000u);
  expect_golden(t, text, want);
  EXPECT_EQ(t.decode(want), text);
}

TEST(BpeTokenizer, ATiktokenRanksFileGivesTheSameIds) {
  if (!vocab_dir()) GTEST_SKIP() << "OpenAI's GPT-2 vocabulary is not in .cache/gpt2 (scripts/gpt2_vocab.sh could not fetch it)";
  const BpeTokenizer t = BpeTokenizer::load(vocab_dir());
  TempDir dir;
  {
    std::ofstream out(dir.path() / "gpt2.tiktoken");
    for (std::uint32_t id = 0; id < t.end_of_text(); ++id) out << base64(t.decode({id})) << ' ' << id << '\n';
  }
  const BpeTokenizer r = BpeTokenizer::load(dir.path().string());
  EXPECT_EQ(r.vocab(), t.vocab());
  EXPECT_EQ(r.end_of_text(), t.end_of_text());
  expect_golden(r, read(fs::path(TZ_GOLDEN_DIR) / "bpe_input.txt"), golden_ids());
}

TEST(BpeTokenizer, RejectsAnEncoderAndMergesThatDoNotMatch) {
  if (!vocab_dir()) GTEST_SKIP() << "OpenAI's GPT-2 vocabulary is not in .cache/gpt2 (scripts/gpt2_vocab.sh could not fetch it)";
  TempDir dir;
  fs::copy_file(fs::path(vocab_dir()) / "encoder.json", dir.path() / "encoder.json");
  // Two merges swapped: each file alone is well formed, together they disagree.
  std::istringstream in(read(fs::path(vocab_dir()) / "vocab.bpe"));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::swap(lines[10], lines[11]);
  std::ofstream out(dir.path() / "vocab.bpe");
  for (const auto& l : lines) out << l << '\n';
  out.close();
  try {
    BpeTokenizer::load(dir.path().string());
    FAIL() << "a mismatched pair was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find("vocab.bpe' line 11 merges into a token"), std::string::npos) << e.message();
  }
}

// Hugging Face tokenizer.json files, when scripts/hf_tokenizers.sh could fetch them.
std::string hf_file(const std::string& name) {
  const fs::path f = fs::path(TZ_CACHE_DIR) / "hf-tokenizers" / name / "tokenizer.json";
  return fs::exists(f) ? f.string() : "";
}

// bpe_input.txt cut at `at` bytes, moved forward to a character's start.
std::size_t cut(const std::string& b, std::size_t at) {
  while ((static_cast<unsigned char>(b[at]) & 0xC0) == 0x80) ++at;
  return at;
}

// The golden texts of tests/golden/make_hf_tokenizer_golden.sh: bpe_input.txt
// with `first` and `second` at its thirds.
std::string hf_golden_text(const std::string& first = "<|endoftext|>", const std::string& second = "<|begin_of_text|>") {
  const std::string b = read(fs::path(TZ_GOLDEN_DIR) / "bpe_input.txt");
  const std::size_t one = cut(b, b.size() / 3), two = cut(b, 2 * b.size() / 3);
  return b.substr(0, one) + first + b.substr(one, two - one) + second + b.substr(two);
}

std::vector<std::uint32_t> golden_u32(const std::string& file) {
  const std::string raw = read(fs::path(TZ_GOLDEN_DIR) / file);
  std::vector<std::uint32_t> ids(raw.size() / 4);
  std::memcpy(ids.data(), raw.data(), raw.size());
  return ids;
}

// Llama 3 (tiktoken-derived merges, ignore_merges, 256 added tokens) and
// Qwen3 (NFC, one digit per piece, merges as pairs) against the ids of
// @huggingface/tokenizers on the golden text: every id, the special tokens
// as their own ids, and decode giving the text back (Llama 3; Qwen3's
// decode gives the NFC form).
TEST(HfTokenizerJson, MatchesHuggingFaceTokenizersOnTheGoldenText) {
  const std::string text = hf_golden_text();
  for (const char* name : {"llama3", "qwen3"}) {
    SCOPED_TRACE(name);
    const std::string file = hf_file(name);
    if (file.empty()) GTEST_SKIP() << "no tokenizer.json in .cache/hf-tokenizers (scripts/hf_tokenizers.sh could not fetch them)";
    const BpeTokenizer t = BpeTokenizer::load(file);
    const std::vector<std::uint32_t> want = golden_u32(std::string("hf_tok_") + name + ".u32");
    ASSERT_GT(want.size(), 100000u);
    expect_golden(t, text, want);
    const bool llama = std::string(name) == "llama3";
    EXPECT_EQ(t.vocab(), llama ? 128256u : 151669u);
    EXPECT_EQ(t.end_of_text(), llama ? 128001u : 151643u);  // <|end_of_text|>, <|endoftext|>
    // Llama 3's <|begin_of_text|> by name (this file's post-processor is ByteLevel alone: it adds none); Qwen has none.
    EXPECT_EQ(t.begin_of_text(), llama ? std::optional<std::uint32_t>(128000u) : std::nullopt);
    EXPECT_FALSE(t.adds_begin_of_text());
    // Each special token of the text (Llama 3's <|begin_of_text|>, Qwen's <|endoftext|>) as its own id.
    const std::string special = llama ? "<|begin_of_text|>" : "<|endoftext|>";
    std::size_t occurrences = 0;
    for (std::size_t at = text.find(special); at != std::string::npos; at = text.find(special, at + 1)) ++occurrences;
    EXPECT_GE(occurrences, 1u);
    EXPECT_EQ(static_cast<std::size_t>(std::count(want.begin(), want.end(), llama ? 128000u : 151643u)), occurrences);
    if (llama) {
      EXPECT_EQ(t.decode(want), text);
    }
  }
}

// Mistral 7B's tokenizer.json (byte fallback in Llama 2's format: the
// Prepend + Replace normalizer) against @huggingface/tokenizers on the
// golden text with </s> and <s> in it; then the same vocabulary as
// transformers' non-legacy conversion writes it (no normalizer, Metaspace
// "first" without splitting) on a text whose pieces start at the text's
// start, after "</s> " and after "<s>" (only the first gets a space mark).
TEST(HfTokenizerJson, ByteFallbackMatchesHuggingFaceTokenizers) {
  const std::string file = hf_file("mistral");
  if (file.empty()) GTEST_SKIP() << "no tokenizer.json in .cache/hf-tokenizers (scripts/hf_tokenizers.sh could not fetch them)";
  const BpeTokenizer t = BpeTokenizer::load(file);
  EXPECT_TRUE(t.byte_fallback());
  EXPECT_EQ(t.vocab(), 32000u);
  EXPECT_EQ(t.end_of_text(), 2u);                                     // </s>
  EXPECT_EQ(t.begin_of_text(), std::optional<std::uint32_t>(1u));  // <s>, from the TemplateProcessing post-processor
  EXPECT_TRUE(t.adds_begin_of_text());
  EXPECT_EQ(t.encode("Hello world"), (std::vector<std::uint32_t>{22557, 1526}));  // "▁Hello", "▁world"
  EXPECT_EQ(t.encode("\n"), (std::vector<std::uint32_t>{28705, 13}));  // "▁", then <0x0A>: no token for a newline
  const std::string text = hf_golden_text("</s>", "<s>");
  const std::vector<std::uint32_t> want = golden_u32("hf_tok_mistral.u32");
  ASSERT_GT(want.size(), 100000u);
  expect_golden(t, text, want);
  EXPECT_EQ(std::count(want.begin(), want.end(), 2u), 1);
  EXPECT_EQ(std::count(want.begin(), want.end(), 1u), 1);
  // Bytes of characters the vocabulary lacks (<0x03> .. <0x102>) are there, and decode gives every byte back:
  // the text with a space before each of its three pieces (Llama 2's normalizer marks every piece).
  EXPECT_TRUE(std::any_of(want.begin(), want.end(), [](std::uint32_t id) { return id >= 3 && id < 259; }));
  const std::size_t one = text.find("</s>"), two = text.find("<s>");
  EXPECT_EQ(t.decode(want), " " + text.substr(0, one + 4) + " " + text.substr(one + 4, two + 3 - one - 4) + " " + text.substr(two + 3));

  nlohmann::json j = nlohmann::json::parse(read(file));
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", false}};
  TempDir dir;
  std::ofstream(dir.path() / "tokenizer.json") << j.dump();
  const BpeTokenizer m = BpeTokenizer::load(dir.path().string());
  const std::string b = read(fs::path(TZ_GOLDEN_DIR) / "bpe_input.txt");
  const std::size_t a = cut(b, 24000), c = cut(b, 48000), e = cut(b, 72000);
  const std::string mtext = b.substr(0, a) + "</s> " + b.substr(a, c - a) + "<s>" + b.substr(c, e - c);
  const std::vector<std::uint32_t> mwant = golden_u32("hf_tok_mistral_metaspace.u32");
  ASSERT_GT(mwant.size(), 10000u);
  expect_golden(m, mtext, mwant);
  EXPECT_EQ(m.decode(mwant), " " + mtext);  // one mark, at the start: the piece after "</s>" starts with a space already
}

// A small byte-fallback BPE worked by hand: characters first (é is one
// token, "ж" is not and becomes its two bytes' tokens), merges by rank,
// spaces as U+2581 and a mark before each piece between added tokens.
std::string small_sentencepiece_json(const nlohmann::json& normalizer, const nlohmann::json& pre_tokenizer) {
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  std::uint32_t id = 259;
  for (const char* p : {"\u2581", "a", "b", "c", "\u00e9", "\u2581a", "ab", "\u2581ab", "bc", "\u2581\u2581"}) vocab[p] = id++;
  const nlohmann::json merges = nlohmann::json::array({"\u2581 a", "b c", "a b", "\u2581a b", "\u2581 \u2581"});
  nlohmann::json added = nlohmann::json::array();
  int k = 0;
  for (const char* name : {"<unk>", "<s>", "</s>"}) added.push_back({{"id", k++}, {"content", name}, {"special", true}, {"normalized", false}});
  return nlohmann::json{{"normalizer", normalizer},
                        {"pre_tokenizer", pre_tokenizer},
                        {"post_processor", {{"type", "TemplateProcessing"},
                                            {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                                            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
                        {"model", {{"type", "BPE"}, {"byte_fallback", true}, {"unk_token", "<unk>"}, {"fuse_unk", true}, {"vocab", vocab},
                                   {"merges", merges}}},
                        {"added_tokens", added}}
      .dump();
}

TEST(HfTokenizerJson, ByteFallbackWorkedByHand) {
  // Ids: 259 ▁, 260 a, 261 b, 262 c, 263 é, 264 ▁a, 265 ab, 266 ▁ab, 267 bc, 268 ▁▁; merges ranked ▁a, bc, ab, ▁ab, ▁▁.
  const nlohmann::json legacy = {{"type", "Sequence"},
                                 {"normalizers", {{{"type", "Prepend"}, {"prepend", "\u2581"}},
                                                  {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
  TempDir dir;
  std::ofstream(dir.path() / "tokenizer.json") << small_sentencepiece_json(legacy, nullptr);
  const BpeTokenizer t = BpeTokenizer::load(dir.path().string());
  EXPECT_EQ(t.vocab(), 269u);
  EXPECT_EQ(t.end_of_text(), 2u);
  EXPECT_EQ(t.begin_of_text(), std::optional<std::uint32_t>(1u));
  // "▁abc": ▁a (rank 0) first, then bc (rank 1) leaves ▁a + bc; "▁ab" (rank 3) never forms.
  EXPECT_EQ(t.encode("abc"), (std::vector<std::uint32_t>{264, 267}));
  // "▁ab": ▁a, then ▁a b -> ▁ab.
  EXPECT_EQ(t.encode("ab"), (std::vector<std::uint32_t>{266}));
  // é (2 bytes) is a token; ж (D0 B6) is not: its bytes' tokens, 3 + 0xD0 and 3 + 0xB6.
  EXPECT_EQ(t.encode("\xC3\xA9\xD0\xB6"), (std::vector<std::uint32_t>{259, 263, 3 + 0xD0, 3 + 0xB6}));
  // Spaces: "a  b" -> ▁a ▁ ▁ b -> ▁a then ▁▁ (rank 4) -> ▁a ▁▁ b.
  EXPECT_EQ(t.encode("a  b"), (std::vector<std::uint32_t>{264, 268, 261}));
  // Added tokens split the text, and Llama 2's normalizer marks every piece.
  EXPECT_EQ(t.encode("a</s>b<s>"), (std::vector<std::uint32_t>{264, 2, 259, 261, 1}));
  EXPECT_EQ(t.decode(t.encode("a</s>b<s>")), " a</s> b<s>");
  EXPECT_EQ(t.decode({3 + 0xD0, 3 + 0xB6, 266}), "\xD0\xB6 ab");
  // Metaspace "first": only the piece at the text's start, unless it starts with a space; "always": each such piece.
  const nlohmann::json first = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", false}};
  std::ofstream(dir.path() / "tokenizer.json") << small_sentencepiece_json(nullptr, first);
  const BpeTokenizer f = BpeTokenizer::load(dir.path().string());
  EXPECT_EQ(f.encode("a</s>b</s> c"), (std::vector<std::uint32_t>{264, 2, 261, 2, 259, 262}));
  nlohmann::json always = first;
  always["prepend_scheme"] = "always";
  std::ofstream(dir.path() / "tokenizer.json") << small_sentencepiece_json(nullptr, always);
  EXPECT_EQ(BpeTokenizer::load(dir.path().string()).encode("a</s>b</s> c"), (std::vector<std::uint32_t>{264, 2, 259, 261, 2, 259, 262}));
}

// A small byte-level BPE: the 256 bytes (GPT-2's byte characters), "ab",
// "bc" and "abc"; merges "b c" before "a b", then "a bc".
std::string small_tokenizer_json(bool ignore_merges) {
  nlohmann::json vocab, added = nlohmann::json::array();
  std::uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    const char32_t cp = printable ? static_cast<char32_t>(b) : next++;
    std::string key;
    if (cp < 0x80) key += static_cast<char>(cp);
    else key += static_cast<char>(0xC0 | (cp >> 6)), key += static_cast<char>(0x80 | (cp & 0x3F));
    vocab[key] = b;
  }
  vocab["ab"] = 256, vocab["bc"] = 257, vocab["abc"] = 258;
  added.push_back({{"id", 259}, {"content", "<|endoftext|>"}, {"special", true}});
  return nlohmann::json{{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"b c", "a b", "a bc"}}, {"ignore_merges", ignore_merges}}},
                        {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
                        {"added_tokens", added}}
      .dump();
}

// Hugging Face's rule: merges by pair rank ("b c" first, so "abc" is a + bc,
// then a bc), not tiktoken's rank of the union; ignore_merges takes a piece
// that is a token whole; added tokens split the text.
TEST(HfTokenizerJson, MergesByPairRankAndAddedTokensSplit) {
  TempDir dir;
  std::ofstream(dir.path() / "tokenizer.json") << small_tokenizer_json(false);
  const BpeTokenizer t = BpeTokenizer::load(dir.path().string());
  EXPECT_EQ(t.encode("abc"), (std::vector<std::uint32_t>{258}));
  EXPECT_EQ(t.encode("ab"), (std::vector<std::uint32_t>{256}));
  EXPECT_EQ(t.encode("abab"), (std::vector<std::uint32_t>{256, 256}));
  EXPECT_EQ(t.encode("ab<|endoftext|>bc"), (std::vector<std::uint32_t>{256, 259, 257}));
  EXPECT_EQ(t.end_of_text(), 259u);
  EXPECT_EQ(t.vocab(), 260u);
  // Without the "a bc" merge "abc" stays a + bc unless ignore_merges takes the whole piece.
  std::string json = small_tokenizer_json(false);
  json.replace(json.find(",\"a bc\""), 7, "");
  std::ofstream(dir.path() / "tokenizer.json") << json;
  EXPECT_EQ(BpeTokenizer::load(dir.path().string()).encode("abc"), (std::vector<std::uint32_t>{'a', 257}));
  json.replace(json.find("\"ignore_merges\":false"), 21, "\"ignore_merges\":true");
  std::ofstream(dir.path() / "tokenizer.json") << json;
  EXPECT_EQ(BpeTokenizer::load(dir.path().string()).encode("abc"), (std::vector<std::uint32_t>{258}));
}

// The NFC normalizer composes before splitting (e + U+0301 is U+00E9, bytes
// C3 A9), and invalid UTF-8 is named with its byte before ICU sees it.
TEST(HfTokenizerJson, NfcComposesBeforeSplitting) {
  TempDir dir;
  std::string json = small_tokenizer_json(false);
  json.insert(1, "\"normalizer\":{\"type\":\"NFC\"},");
  std::ofstream(dir.path() / "tokenizer.json") << json;
  const BpeTokenizer t = BpeTokenizer::load(dir.path().string());
  EXPECT_EQ(t.encode("e\xCC\x81"), (std::vector<std::uint32_t>{0xC3, 0xA9}));
  EXPECT_EQ(t.encode("ab<|endoftext|>"), (std::vector<std::uint32_t>{256, 259}));
  try {
    t.encode("ab\xFF");
    ADD_FAILURE() << "accepted invalid UTF-8";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find("not valid UTF-8 at byte 2"), std::string::npos) << e.message();
  }
}

TEST(HfTokenizerJson, RefusesWhatItCannotTokeniseAlike) {
  TempDir dir;
  auto expect = [&](const std::string& json, const std::string& part) {
    std::ofstream(dir.path() / "tokenizer.json") << json;
    try {
      BpeTokenizer::load(dir.path().string());
      ADD_FAILURE() << "accepted: " << json;
    } catch (const FormatError& e) {
      EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
    }
  };
  expect("{", "is not valid JSON");
  // An added token on a vocabulary token's id (found by the fuzzer: decoding could not give the text back).
  std::string json = small_tokenizer_json(false);
  json.replace(json.find("\"id\":259"), 8, "\"id\":258");
  expect(json, "'<|endoftext|>' has id 258, which is already 'abc'");
  expect(R"({"model": {"type": "WordPiece"}})", "model type 'WordPiece' is not supported");
  expect(R"({"model": {"type": "Unigram", "vocab": []}})", "model type 'Unigram' is not supported");
  expect(R"({"model": {"vocab": {}}})", "key 'model.type' is missing");
  expect(R"({"model": {"type": "BPE", "byte_fallback": true}})", "key 'pre_tokenizer' of a byte-fallback tokenizer must be Metaspace");
  expect(R"({"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581"}, "model": {"type": "BPE", "byte_fallback": true}})",
         "key 'pre_tokenizer.split' must be false");
  expect(R"({"normalizer": {"type": "NFKC"}, "model": {"type": "BPE", "byte_fallback": true}})", "must be Llama 2's");
  expect(R"({"model": {"type": "BPE", "byte_fallback": "yes"}})", "malformed tokenizer.json");
  // A byte-fallback vocabulary without every byte's token.
  std::string sp = small_sentencepiece_json(nullptr, {{"type", "Metaspace"}, {"prepend_scheme", "first"}, {"split", false}});
  sp.replace(sp.find("\"<0x41>\""), 8, "\"<0x4G>\"");
  expect(sp, "byte_fallback needs the 256 tokens <0x00> to <0xFF>; <0x41> is missing");
  expect(R"({"normalizer": {"type": "NFKC"}, "model": {"type": "BPE"}})", "key 'normalizer' must be null or NFC");
  expect(R"({"pre_tokenizer": {"type": "Whitespace"}, "model": {"type": "BPE"}})", "key 'pre_tokenizer' must be ByteLevel");
  expect(R"({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Removed"},
      {"type": "ByteLevel", "use_regex": false}]}, "model": {"type": "BPE"}})", "behavior must be Isolated");
}

}  // namespace
}  // namespace tierzero
