// tierzero ckpt inspect | verify | export: read a checkpoint without MPI.
#include <cstdio>

#include "commands.h"
#include "tierzero/checkpoint.h"
#include "tierzero/error.h"
#include "tierzero/hugging_face.h"

namespace tierzero::cli {

namespace {
struct ExportArgs {
  std::string source, format = "tierzero", output, dtype = "fp32", tokenizer;
  std::uint64_t max_shard_bytes = 0;
};

int export_weights(const ExportArgs& a) {
  TZ_CHECK(a.format == "tierzero" || a.format == "hf" || a.format == "hf-gpt2" || a.format == "hf-llama", ConfigError,
           "--format must be tierzero, hf, hf-gpt2 or hf-llama, got '" + a.format + "'");
  TZ_CHECK(!a.output.empty(), ConfigError, "give --output (or --safetensors FILE)");
  TZ_CHECK(a.format != "tierzero" || (a.dtype == "fp32" && a.max_shard_bytes == 0 && a.tokenizer.empty()), ConfigError,
           "--dtype, --max-shard-size and --tokenizer-file are for the Hugging Face formats (tierzero's export is one fp32 file)");
  CheckpointReader ckpt(a.source);
  if (a.format == "tierzero") {
    export_safetensors(ckpt, a.output);
  } else {
    const GptConfig& m = ckpt.meta().model;
    HfExportOptions opt{parse_dtype(a.dtype), a.max_shard_bytes, std::nullopt};
    if (!a.tokenizer.empty()) opt.tokenizer = hf_tokenizer_export(a.tokenizer);
    const bool gpt2 = a.format == "hf-gpt2" || (a.format == "hf" && m.family() == "gpt2");
    if (gpt2) write_hf_gpt2(m, ckpt.read_full_master(), a.output, opt);
    else write_hf_llama(m, ckpt.read_full_master(), a.output, opt);
  }
  std::fprintf(stderr, "tierzero: wrote %s (%s, step %lld)\n", a.output.c_str(), a.format.c_str(), static_cast<long long>(ckpt.meta().step));
  return 0;
}

int inspect(const std::string& path) {
  const CheckpointReader ckpt(path);
  const CheckpointMeta& m = ckpt.meta();
  std::printf("checkpoint   %s\n", ckpt.dir().c_str());
  std::printf("step         %lld (steps completed; a resumed run continues with step %lld)\n", static_cast<long long>(m.step),
              static_cast<long long>(m.step + 1));
  std::printf("model        %s\n", m.model.describe().c_str());
  std::printf("plan         %s\n", m.plan.describe().c_str());
  std::printf("topology     %s (%d ranks)\n", m.topology.c_str(), m.world_size);
  if (m.tp > 1) std::printf("tensor       tp %d on the %s level\n", m.tp, m.tp_level.c_str());
  std::printf("training     seed %llu, micro-batch %d x %d, seq %d, %s parameters, lr %g, loss scale %g\n",
              static_cast<unsigned long long>(m.train.seed), m.train.micro_batch, m.train.grad_accum, m.train.seq_len,
              std::string(dtype_name(m.train.param_dtype)).c_str(), m.train.schedule.lr, m.loss_scale);
  std::printf("data         %s\n", m.data_origin.c_str());
  std::uint64_t total = 0;
  for (const CheckpointFile& f : m.files) total += f.bytes;
  std::printf("files        %zu shard files, %llu bytes\n", m.files.size(), static_cast<unsigned long long>(total));
  const auto problems = ckpt.verify();
  for (const auto& p : problems) std::fprintf(stderr, "tierzero: error: %s\n", p.c_str());
  std::printf("checksums    %s\n", problems.empty() ? "all match" : "MISMATCH (see errors)");
  return problems.empty() ? 0 : 2;
}
// Checks meta.json and every shard's size and CRC-32 without loading the model; exit 2 naming the first bad file.
int verify(const std::string& path) {
  const CheckpointReader ckpt(path);  // throws FormatError naming meta.json when it is missing or malformed
  const auto problems = ckpt.verify();
  TZ_CHECK(problems.empty(), FormatError, problems.front() + (problems.size() > 1 ? " (and " + std::to_string(problems.size() - 1) + " more)" : ""));
  std::printf("%s: meta.json and %zu shard files verified\n", ckpt.dir().c_str(), ckpt.meta().files.size());
  return 0;
}
}  // namespace

void add_ckpt_command(CLI::App& app, Context& ctx) {
  CLI::App* ckpt = app.add_subcommand("ckpt", "Inspect and export checkpoints");
  ckpt->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  CLI::App* ins = ckpt->add_subcommand("inspect", "Print what a checkpoint holds and verify every shard");
  ins->add_option("dir", *path, "Checkpoint step directory, or a save directory (its latest)")->required();
  ins->callback([path, &ctx] { ctx.exit_code = inspect(*path); });
  auto vpath = std::make_shared<std::string>();
  CLI::App* ver = ckpt->add_subcommand("verify", "Check the metadata and every shard's checksum without loading the model");
  ver->add_option("dir", *vpath, "Checkpoint step directory, or a save directory (its latest)")->required();
  ver->callback([vpath, &ctx] { ctx.exit_code = verify(*vpath); });
  auto out = std::make_shared<ExportArgs>();
  CLI::App* exp = ckpt->add_subcommand("export", "Write the consolidated fp32 weights: tierzero safetensors or a Hugging Face directory");
  exp->add_option("dir", out->source, "Checkpoint step directory, or a save directory (its latest)")->required();
  exp->add_option("--format", out->format,
                  "tierzero (one safetensors file, tierzero's names), hf (a Hugging Face directory in the model's layout), "
                  "hf-gpt2 (model.safetensors with transformers' GPT-2 names and Conv1D layout, and config.json) or hf-llama "
                  "(LlamaForCausalLM, or Qwen2ForCausalLM with q/k/v biases)")
      ->capture_default_str();
  auto* output = exp->add_option("--output", out->output, "Output file (tierzero) or directory (hf, hf-gpt2, hf-llama)");
  exp->add_option("--dtype", out->dtype, "Hugging Face formats: the tensors' dtype, fp32, bf16 or fp16 (rounded to nearest even)")
      ->capture_default_str();
  exp->add_option("--max-shard-size", out->max_shard_bytes,
                  "Hugging Face formats: the largest shard, e.g. 5GB (model-0000K-of-0000N.safetensors + model.safetensors.index.json); "
                  "default one model.safetensors")
      ->transform(CLI::AsSizeValue(true));
  exp->add_option("--tokenizer-file", out->tokenizer,
                  "Hugging Face formats: a tokenizer.json (or its directory) to ship beside the weights: copied with its "
                  "tokenizer_config.json and special_tokens_map.json where they are beside it (else a tokenizer_config.json is "
                  "written), its begin- and end-of-text ids in config.json and generation_config.json, so transformers' "
                  "AutoTokenizer and generate() work on the directory");
  exp->add_option("--safetensors", out->output, "Same as --format tierzero --output FILE")->excludes(output);
  exp->callback([out, &ctx] { ctx.exit_code = export_weights(*out); });
}

}  // namespace tierzero::cli
