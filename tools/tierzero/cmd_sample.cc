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
  std::string checkpoint, prompt = "\n", tokenizer, tokenizer_dir;
  SampleOptions options;
};

int run_sample(const SampleArgs& a) {
  const ModelWeights w = load_model_weights(a.checkpoint);
  // The tokenizer: as given, else byte-level for a 256-token vocabulary and GPT-2's BPE for larger ones.
  const std::string kind = !a.tokenizer.empty() ? a.tokenizer : w.model.vocab == 256 ? "byte" : "gpt2";
  TZ_CHECK(kind == "byte" || kind == "gpt2", ConfigError, "--tokenizer must be byte or gpt2, got '" + kind + "'");
  std::optional<BpeTokenizer> bpe;
  if (kind == "gpt2") {
    TZ_CHECK(!a.tokenizer_dir.empty(), ConfigError,
             "the model's vocabulary is " + std::to_string(w.model.vocab) +
                 ": give --tokenizer-dir (GPT-2's encoder.json + vocab.bpe) or --tokenizer byte");
    bpe = BpeTokenizer::load(a.tokenizer_dir);
    TZ_CHECK(bpe->vocab() <= static_cast<std::uint32_t>(w.model.vocab), ConfigError,
             "the tokenizer's vocabulary of " + std::to_string(bpe->vocab()) + " does not fit the model's " + std::to_string(w.model.vocab));
  }
  const std::vector<std::uint32_t> prompt = bpe ? bpe->encode(a.prompt) : byte_encode(a.prompt);
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
                "Checkpoint (step or save directory), tierzero safetensors export, or Hugging Face GPT-2 directory")
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
  c->callback([a, &ctx] { ctx.exit_code = run_sample(*a); });
}

}  // namespace tierzero::cli
