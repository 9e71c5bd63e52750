#include "tokenizer_bench.h"

#include <nlohmann/json.hpp>

#include "best_seconds.h"
#include "core/read_file.h"
#include "tierzero/data.h"
#include "tierzero/error.h"
#include "tierzero/tokenizer.h"

namespace tierzero::bench {

TokenizerBenchRow run_tokenizer_bench(const std::string& vocab, const std::string& input, int reps) {
  const auto read = read_file(input);
  TZ_CHECK(read, ConfigError, "cannot read input '" + input + "'");
  const std::string& text = *read;
  const BpeTokenizer tok = BpeTokenizer::load(vocab);
  TokenizerBenchRow row;
  row.text_bytes = text.size();
  row.tokens = tok.encode(text).size();
  const double mb = static_cast<double>(text.size()) / 1e6;
  row.bpe_mbs = mb / best_seconds(reps, [&] { (void)tok.encode(text); });
  row.byte_mbs = mb / best_seconds(reps, [&] { (void)byte_encode(text); });
  return row;
}

std::string to_json_line(const TokenizerBenchRow& r) {
  nlohmann::ordered_json j;
  j["bench"] = "tokenizer";
  j["text_bytes"] = r.text_bytes;
  j["tokens"] = r.tokens;
  j["bytes_per_token"] = r.tokens ? static_cast<double>(r.text_bytes) / static_cast<double>(r.tokens) : 0.0;
  j["bpe_mb_per_s"] = r.bpe_mbs;
  j["byte_mb_per_s"] = r.byte_mbs;
  return j.dump();
}

}  // namespace tierzero::bench
