// GPT-2 BPE encoding throughput on one core (bench tokenizer): MB of UTF-8
// text per second, best of several passes over the same text, beside the
// byte-level tokenizer's on the same text, in one run.
#pragma once
#include <string>

namespace tierzero::bench {

struct TokenizerBenchRow {
  std::size_t text_bytes = 0, tokens = 0;
  double bpe_mbs = 0;  // 1e6 bytes of text per second
  double byte_mbs = 0;
};

// `input`: a UTF-8 text file (ConfigError when it cannot be read); `vocab`: BpeTokenizer::load's path.
TokenizerBenchRow run_tokenizer_bench(const std::string& vocab, const std::string& input, int reps);
std::string to_json_line(const TokenizerBenchRow& row);

}  // namespace tierzero::bench
