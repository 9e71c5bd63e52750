// libFuzzer target for every parser of outside input (built by
// scripts/fuzz.sh with -fsanitize=fuzzer,address,undefined): one executable,
// the parser under test named by the environment variable TZ_FUZZ_PARSER
// (one campaign per parser, each with its own corpus). A parser may reject an input only
// with a tierzero::Error naming the problem: any other exception, a crash,
// a sanitizer report, a hang or an unbounded allocation is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "tierzero/checkpoint.h"
#include "tierzero/data.h"
#include "tierzero/deepspeed_config.h"
#include "tierzero/error.h"
#include "ckpt/safetensors.h"
#include "core/toml_read.h"
#include "model/model_file.h"
#include "tierzero/system.h"
#include "tierzero/tokenizer.h"
#include "tierzero/train_config.h"

namespace {
using namespace tierzero;

// A toy GPT-2 vocabulary (the 256 bytes and a few merges, some across
// multi-byte characters) for the BPE encoder's target.
const BpeTokenizer& toy_bpe() {
  static const BpeTokenizer t = [] {
    const std::string path = (std::filesystem::temp_directory_path() / "tz_fuzz_toy.tiktoken").string();
    static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    auto b64 = [](const std::string& s) {
      std::string out;
      for (std::size_t i = 0; i < s.size(); i += 3) {
        std::uint32_t v = static_cast<unsigned char>(s[i]) << 16;
        if (i + 1 < s.size()) v |= static_cast<unsigned char>(s[i + 1]) << 8;
        if (i + 2 < s.size()) v |= static_cast<unsigned char>(s[i + 2]);
        for (int k = 0; k < 4; ++k) out += k <= static_cast<int>(s.size() - i) ? abc[(v >> (18 - 6 * k)) & 63] : '=';
      }
      return out;
    };
    std::ofstream out(path);
    int id = 0;
    for (int b = 0; b < 256; ++b) out << b64(std::string(1, static_cast<char>(b))) << ' ' << id++ << '\n';
    for (const char* m : {"th", "the", " the", "  ", "\xC3\xA9", "12", "'s", "\xE2\x80", "\xE2\x80\x99"}) out << b64(m) << ' ' << id++ << '\n';
    out.close();
    return BpeTokenizer::load(path);
  }();
  return t;
}

void parse(std::string_view parser, std::string_view in) {
  const std::string text(in);
  if (parser == "run_config") {
    TrainConfig cfg;
    parse_train_config(text, "fuzz.toml", cfg);
  } else if (parser == "system") {
    parse_system_toml(text, "fuzz.toml");
  } else if (parser == "deepspeed") {
    static const Topology topo = Topology::parse("package=2,node=2,world=2", 8);
    TrainConfig cfg;
    const DeepSpeedMapping m = parse_deepspeed_config(text, "ds.json", topo, cfg);
    finish_deepspeed_run(m, "ds.json", cfg, 8);
  } else if (parser == "token_file") {
    check_token_file(in.data(), in.size(), "fuzz.bin");
  } else if (parser == "safetensors") {
    for (const auto& [name, t] : parse_safetensors(in, "fuzz.safetensors").tensors)
      if (t.dtype == "F32" || t.dtype == "BF16" || t.dtype == "F16") t.as_f32();
  } else if (parser == "megatron_index") {
    if (in.size() < 4) return;  // the input: the .bin's size (uint32), then the index
    std::uint32_t bin_bytes;
    std::memcpy(&bin_bytes, in.data(), 4);
    check_megatron_index(in.data() + 4, in.size() - 4, bin_bytes, "fuzz.idx");
  } else if (parser == "bpe_encode") {
    const auto ids = toy_bpe().encode(in);
    if (toy_bpe().decode(ids) != in) __builtin_trap();  // encoding must be lossless
  } else if (parser == "hf_config") {
    parse_hf_config(text, "config.json").validate();
  } else if (parser == "model_toml") {
    GptConfig m;
    read_model_table(parse_toml(text, "model.toml"), "model.toml", "", m);
  } else if (parser == "tokenizer_json") {
    static const std::string path = (std::filesystem::temp_directory_path() / ("tz_fuzz_" + std::to_string(::getpid()) + ".json")).string();
    std::ofstream(path, std::ios::binary) << text;
    const BpeTokenizer t = BpeTokenizer::load(path);
    const std::string hello = "Hello <|endoftext|> world", back = t.decode(t.encode(hello));
    // Byte-level BPE gives the text back; byte fallback gives it with a space before each piece (its U+2581 marks).
    auto spaceless = [](std::string s) { return std::erase(s, ' '), s; };
    if (t.byte_fallback() ? spaceless(back) != spaceless(hello) : back != hello) __builtin_trap();
  } else if (parser == "checkpoint_meta") {
    CheckpointMeta::from_json(text, "meta.json").to_json();
  } else {
    __builtin_trap();  // LLVMFuzzerInitialize refused any other name
  }
}

const char* const kParsers[] = {"run_config", "system", "deepspeed", "token_file", "safetensors", "checkpoint_meta",
                                "megatron_index", "bpe_encode", "hf_config", "model_toml", "tokenizer_json"};
std::string_view parser_under_test;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("TZ_FUZZ_PARSER");
  for (const char* p : kParsers)
    if (name && parser_under_test.empty() && std::string_view(name) == p) parser_under_test = p;
  if (parser_under_test.empty()) {  // scripts/fuzz.sh reads its list of parsers from this line
    std::fprintf(stderr, "fuzz_parsers: set TZ_FUZZ_PARSER to one of:");
    for (const char* p : kParsers) std::fprintf(stderr, " %s", p);
    std::fprintf(stderr, " (got '%s')\n", name ? name : "");
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    parse(parser_under_test, std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const tierzero::Error&) {
    // a clear rejection: what a bad file must get
  }
  return 0;
}
