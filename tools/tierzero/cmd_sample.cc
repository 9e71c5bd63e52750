// tierzero sample: text from a trained model (one rank, CPU, KV cache).
#include <cstdio>
#include <optional>

#include "commands.h"
#include "validators.h"
#include "tierzero/data.h"
#include "tierzero/error.h"
#include "tierzero/generate.h"
#include "tierzero/hugging_face.h"
#include "tierzero/tokenizer.h"

namespace tierzero::cli {

namespace {
struct SampleArgs {
  std::string checkpoint, prompt = "\n", tokenizer, tokenizer_dir, tokenizer_file;
  SampleOptions options;
};

int run_sample(const SampleArgs& a) {
  // The tokenizer: a tokenizer.json (read first: a bad one fails before the model is), or as --tokenizer says, else
  // byte-level for a 256-token vocabulary and GPT-2's BPE for larger ones.
  const bool file = !a.tokenizer_file.empty();
  TZ_CHECK(!file || (a.tokenizer.empty() && a.tokenizer_dir.empty()), ConfigError,
           "give --tokenizer-file alone, or --tokenizer (with --tokenizer-dir for gpt2)");
  std::optional<BpeTokenizer> bpe;
  if (file) bpe = BpeTokenizer::load(a.tokenizer_file);
  const ModelWeights w = load_model_weights(a.checkpoint);
  const std::string kind = file ? "file" : !a.tokenizer.empty() ? a.tokenizer : w.model.vocab == 256 ? "byte" : "gpt2";
  TZ_CHECK(kind == "byte" || kind == "gpt2" || file, ConfigError, "--tokenizer must be byte or gpt2, got '" + kind + "'");
  if (kind != "byte") {
    TZ_CHECK(file || !a.tokenizer_dir.empty(), ConfigError,
             "the model's vocabulary is " + std::to_string(w.model.vocab) +
                 ": give --tokenizer-file (a Hugging Face tokenizer.json), --tokenizer-dir (GPT-2's encoder.json + vocab.bpe) or "
                 "--tokenizer byte");
    if (!file) bpe = BpeTokenizer::load(a.tokenizer_dir);
    TZ_CHECK(bpe->vocab() <= static_cast<std::uint32_t>(w.model.vocab), ConfigError,
             "the tokenizer's vocabulary of " + std::to_string(bpe->vocab()) + " does not fit the model's " + std::to_string(w.model.vocab));
  }
  std::vector<std::uint32_t> prompt = bpe ? bpe->encode(a.prompt) : byte_encode(a.prompt);
  if (bpe && bpe->adds_begin_of_text()) prompt.insert(prompt.begin(), *bpe->begin_of_text());  // as data prepare and Hugging Face do
  const GptLayout layout(w.model);
  const std::vector<std::uint32_t> ids = sample_tokens(layout, w.params.data(), prompt, a.options);
  for (std::uint32_t id : ids)
    TZ_CHECK(bpe ? id < bpe->vocab() : id < 256, ConfigError,
             "the model drew id " + std::to_string(id) + ", which the tokenizer cannot decode (its vocabulary is larger than the tokenizer's)");
  const std::string text = a.prompt + (bpe ? bpe->decode(ids) : byte_decode(ids));
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}
}  // namespace

void add_sample_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<SampleArgs>();
  CLI::App* c = app.add_subcommand("sample", "Generate text from a trained model (one rank, CPU, KV cache)");
  c->add_option("--checkpoint", a->checkpoint,
                "Checkpoint (step or save directory), tierzero safetensors export, or Hugging Face directory (GPT-2 or Llama layout)")
      ->required();
  c->add_option("--prompt", a->prompt, "Text to continue (default: a newline)");
  c->add_option("--tokens", a->options.tokens, "Tokens to generate")->check(at_least(0))->capture_default_str();
  c->add_option("--temperature", a->options.temperature, "Softmax temperature (> 0; lower is more conservative)")
      ->check(finite_number(true))
      ->capture_default_str();
  c->add_option("--top-k", a->options.top_k, "Sample among the k most likely tokens (0: all)")->check(at_least(0))->capture_default_str();
  c->add_option("--seed", a->options.seed, "Seed: the same seed gives the same text")->capture_default_str();
  c->add_option("--tokenizer", a->tokenizer, "byte or gpt2 (default: byte for a 256-token vocabulary, else gpt2)");
  c->add_option("--tokenizer-dir", a->tokenizer_dir, "For gpt2: encoder.json + vocab.bpe directory, or a .tiktoken file");
  c->add_option("--tokenizer-file", a->tokenizer_file,
                "A Hugging Face tokenizer.json, or its directory (GPT-2, Llama 2/3, Mistral, Qwen2/3: as data prepare reads it); "
                "the prompt starts with its begin-of-text token where its encode adds one");
  c->callback([a, &ctx] { ctx.exit_code = run_sample(*a); });
}

}  // namespace tierzero::cli
