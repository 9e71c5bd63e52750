// tierzero data prepare: text -> token file, with the byte-level tokenizer,
// GPT-2's BPE or a Hugging Face tokenizer.json.
#include <optional>

#include "commands.h"
#include "tierzero/data.h"
#include "tierzero/error.h"
#include "tierzero/tokenizer.h"

namespace tierzero::cli {

namespace {
struct PrepareArgs {
  std::vector<std::string> inputs;
  std::string output, tokenizer = "byte", tokenizer_dir, tokenizer_file;
};

void prepare(const PrepareArgs& a) {
  TZ_CHECK(a.tokenizer == "byte" || a.tokenizer == "gpt2", ConfigError,
           "--tokenizer must be byte or gpt2, got '" + a.tokenizer + "'");
  TZ_CHECK(a.tokenizer == "gpt2" || a.tokenizer_dir.empty(), ConfigError, "--tokenizer-dir is for --tokenizer gpt2");
  TZ_CHECK(a.tokenizer == "byte" || !a.tokenizer_dir.empty() || !a.tokenizer_file.empty(), ConfigError,
           "--tokenizer gpt2 needs --tokenizer-dir: a directory with OpenAI's encoder.json and vocab.bpe, or a gpt2.tiktoken file");
  std::optional<BpeTokenizer> bpe;
  if (!a.tokenizer_file.empty()) {
    TZ_CHECK(a.tokenizer_dir.empty(), ConfigError, "give --tokenizer-file or --tokenizer-dir, not both");
    bpe = BpeTokenizer::load(a.tokenizer_file);
  } else if (a.tokenizer == "gpt2") {
    bpe = BpeTokenizer::load(a.tokenizer_dir);
  }
  const std::size_t n = prepare_token_file(a.inputs, bpe ? &*bpe : nullptr, a.output);
  std::fprintf(stderr, "tierzero: wrote %zu tokens (vocabulary %u) to %s\n", n, bpe ? bpe->vocab() : 256u,
               a.output.c_str());
}
}  // namespace

void add_data_command(CLI::App& app, Context& ctx) {
  CLI::App* data = app.add_subcommand("data", "Prepare training data");
  data->require_subcommand(1);
  auto args = std::make_shared<PrepareArgs>();
  CLI::App* prep = data->add_subcommand("prepare", "Tokenise text files into a token file");
  prep->add_option("--input", args->inputs, "Text file(s); with gpt2, UTF-8, and several are joined by <|endoftext|>")
      ->required();
  prep->add_option("--output", args->output, "Token file to write (.bin); written atomically")->required();
  prep->add_option("--tokenizer", args->tokenizer, "byte (vocabulary 256) or gpt2 (GPT-2 BPE, vocabulary 50257)")
      ->capture_default_str();
  prep->add_option("--tokenizer-dir", args->tokenizer_dir,
                   "For gpt2: directory with encoder.json + vocab.bpe, or a .tiktoken ranks file (scripts/gpt2_vocab.sh fetches them)");
  prep->add_option("--tokenizer-file", args->tokenizer_file,
                   "A Hugging Face tokenizer.json, or its directory: BPE, byte-level (GPT-2, Llama 3, Qwen2/3) or byte-fallback (Llama 2, "
                   "Mistral); scripts/hf_tokenizers.sh fetches Mistral's, Llama 3's and Qwen3's. Several inputs are joined by its "
                   "<|endoftext|>, <|end_of_text|> or </s>, each after its <s> where its encode adds one");
  prep->callback([args, &ctx] {
    prepare(*args);
    ctx.exit_code = 0;
  });
}

}  // namespace tierzero::cli
