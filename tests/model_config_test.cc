// Model descriptions: the Llama-family presets' sizes and FLOPs against
// hand counts, the simulator's activation memory in closed form, model
// files (TOML) and Hugging Face config.json read and refused by key, and
// the description recorded in checkpoints read back.
#include <gtest/gtest.h>

#include "model/activation_sizes.h"
#include "model/gpt.h"
#include "model/ops.h"
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <map>

#include "model/model_file.h"
#include "tierzero/error.h"
#include "tierzero/gpt_config.h"
#include "tierzero/plan.h"
#include "tierzero/simulator.h"
#include "tierzero/system.h"

namespace tierzero {
namespace {
namespace fs = std::filesystem;

fs::path temp_file(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("tz_model_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

void expect_config_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
  }
}

// Hand counts from the published shapes (tierzero/gpt_config.h's presets):
// embeddings V C, each untied head V C, per layer the q and o projections
// C^2 each, k and v KV D C each (+ their biases for Qwen2: C + 2 KV D),
// the SwiGLU MLP 3 F C and two RMSNorm weights C, the final norm C.
TEST(ModelConfig, LlamaFamilySizesMatchHandCounts) {
  EXPECT_EQ(gpt_preset("llama3-8b").num_params(), 8'030'261'248u);  // "8B": 2 x 525,336,576 + 32 x 218,112,000 + 4,096
  EXPECT_EQ(gpt_preset("llama3-70b").num_params(), 70'553'706'496u);
  EXPECT_EQ(gpt_preset("qwen2.5-7b").num_params(), 7'615'616'512u);  // 2 x 544,997,376 + 28 x 233,057,792 + 3,584
  EXPECT_EQ(gpt_preset("llama3.2-1b").num_params(), 1'235'814'400u);  // tied: 262,668,288 + 16 x 60,821,504 + 2,048
  for (const std::string& name : gpt_preset_names())
    EXPECT_EQ(GptLayout(gpt_preset(name)).num_params(), gpt_preset(name).num_params()) << name;
  EXPECT_EQ(gpt_preset("gpt2-124m").family(), "gpt2");
  EXPECT_EQ(gpt_preset("llama-mini").family(), "llama");
  // llama-mini is gpt-mini's size within 0.3%.
  EXPECT_NEAR(static_cast<double>(gpt_preset("llama-mini").num_params()) / gpt_preset("gpt-mini").num_params(), 1.0, 0.003);
}

TEST(ModelConfig, FlopsCountTheHeadNotTheEmbeddingLookupWhenUntied) {
  // llama3-8b at 8192 tokens: 6 (N - V C) + 12 L C T.
  const double n = 8'030'261'248.0 - 128256.0 * 4096;
  EXPECT_DOUBLE_EQ(gpt_preset("llama3-8b").flops_per_token(8192), 6 * n + 12.0 * 32 * 4096 * 8192);
  // GPT-2 (tied): the position table is the lookup; wte counts once as the head.
  const GptConfig g = gpt_preset("gpt2-124m");
  EXPECT_DOUBLE_EQ(g.flops_per_token(1024), 6 * (124439808.0 - 1024 * 768) + 12.0 * 12 * 768 * 1024);
}

// tierzero's engine keeps what its model allocates (fp32 activations, the
// written-out attention's B x H x T x T weights), and the simulator counts
// it from the same sizes (gpt_activation_elements); the other engines keep
// the saved tensors of docs/simulator.md: no s x s scores with
// FlashAttention, the H x s softmax weights of each token with eager attention.
// The size table (model/activation_sizes.h) in closed form for gpt-tiny (C 64, 4 heads, F 256, V 256, 2 layers) at
// 3 x 40 tokens (N 120): per block the norms' outputs and statistics 2 (N C + 2 N), QKV N 3C, the 3 x 4 x 40 x 40
// scores, the attention's output and the residual N C each, the MLP's two N F; the 3 residuals; the final norm and
// the [N, V] softmax; the backward's scratch 2 N C + N C + N 3C + 2 N F. And a tensor-parallel member's model (its
// heads and MLP columns), recomputing or not, with sequence parallelism or not, allocates the table's total.
TEST(ModelConfig, TheActivationSizeTableIsWhatTheModelAllocates) {
  const std::size_t N = 120, C = 64, F = 256, V = 256, scores = 3 * 4 * 40 * 40;
  const std::size_t block = 2 * (N * C + 2 * N) + 3 * N * C + scores + 2 * N * C + 2 * N * F;
  const std::size_t expected = 2 * block + 3 * N * C + (N * C + 2 * N + N * V) + (3 * N * C + 3 * N * C + 2 * N * F);
  EXPECT_EQ(activation_sizes(gpt_preset("gpt-tiny"), 3, 40, false, 0).total(), expected);
  EXPECT_EQ(activation_sizes(gpt_preset("gpt-tiny"), 3, 40, true, 5).total(), expected - block + 5);
  for (const char* name : {"gpt-tiny", "llama-tiny"})
    for (bool recompute : {false, true})
      for (bool sp : {false, true}) {
        const GptLayout layout(gpt_preset(name), TpShard{2, 1});
        TpGroup<float> group;  // never called: the model allocates at construction
        group.sum = [](float*, std::size_t) {};
        group.all_gather = group.reduce_scatter = [](const float*, float*, std::size_t) {};
        group.sequence_parallel = sp;
        const GptModel<float> model(layout, 3, 40, recompute, group);
        const std::size_t scratch = ops::attention_scratch(40, layout.local_heads());
        EXPECT_EQ(model.activation_bytes(), sizeof(float) * activation_sizes(layout.config(), 3, 40, recompute, scratch, 2, sp).total())
            << name << (recompute ? " recomputing" : "") << (sp ? " sp" : "");
        EXPECT_LT(activation_sizes(layout.config(), 3, 40, recompute, scratch, 2, sp).total(),
                  activation_sizes(layout.config(), 3, 40, recompute, scratch, 1).total());
      }
}

TEST(ModelConfig, ActivationMemoryFollowsTheArchitecture) {
  for (const char* name : {"gpt-tiny", "llama-tiny"})
    for (bool recompute : {false, true}) {
      const GptLayout layout(gpt_preset(name));
      const GptModel<float> model(layout, 3, 40, recompute);
      EXPECT_EQ(model.activation_bytes(), sizeof(float) * gpt_activation_elements(layout.config(), 3, 40, recompute,
                                                                                   ops::attention_scratch(40, layout.config().heads)))
          << name << (recompute ? " recomputing" : "");
    }
  SimInput in;
  in.system = load_system("dgx-h100");
  in.ranks = 64;
  in.micro_batch = 1;
  in.seq_len = 8192;
  in.model = gpt_preset("llama3-8b");
  in.plan = fit_to(strategy_plan("zero3"), in.topology());
  const auto part = [&](const char* key) {
    for (const auto& [k, v] : simulate(in).memory_bytes)
      if (k == key) return v;
    return -1.0;
  };
  const double s = 8192, V = 128256;
  EXPECT_DOUBLE_EQ(part("activations"), 4.0 * gpt_activation_elements(in.model, 1, 8192, false, ops::attention_scratch(8192, 32)));
  // FSDP (bf16, FlashAttention): per layer and token the norms' inputs and outputs, Q, K and V (K, V a quarter of Q),
  // the attention's output and SwiGLU's three tensors, 2 bytes each; two RMSNorm statistics; the log-sum-exp per head.
  in.engine = engine_profile("fsdp");
  const double h = 4096, kv = 1024, F = 14336;
  EXPECT_DOUBLE_EQ(part("activations"), 32 * s * ((6 * h + 2 * kv + 3 * F) * 2 + 2 * 4 + 4 * 32));
  EXPECT_DOUBLE_EQ(part("logits"), s * V * 8);  // fp32 log-softmax and its gradient
  // Full recomputation keeps each block's input, and one block's set (and its gradients) while it recomputes.
  in.recompute = Recompute{Recompute::Kind::full};
  const double block = s * ((6 * h + 2 * kv + 3 * F) * 2 + 2 * 4 + 4 * 32);
  EXPECT_DOUBLE_EQ(part("activations"), 32 * s * h * 2 + 2 * block);
  // GPT-20B with eager attention: GELU's two tensors and each token's 64 x 2048 softmax weights.
  in.model = gpt_preset("gpt-20b");
  in.seq_len = 2048;
  in.recompute = Recompute{};
  in.attention = "eager";
  in.plan = fit_to(strategy_plan("zero3"), in.topology());
  const double g = 6144, ff = 4 * g;
  EXPECT_DOUBLE_EQ(part("activations"), 44 * 2048.0 * ((6 * g + 2 * g + 2 * ff) * 2 + 2 * 8 + 64 * 2048.0 * 2));
}

TEST(ModelConfig, ModelFilesGiveEveryKey) {
  const fs::path f = temp_file("my-llama.toml", R"(preset = "llama-tiny"
layers = 3
kv_heads = 1
bias = "qkv"
tied = true
norm_eps = 1e-6
rope_theta = 500000.0
[rope_scaling]
factor = 8.0
low_freq_factor = 1.0
high_freq_factor = 4.0
original_context = 32
)");
  const GptConfig m = load_model(f.string());
  EXPECT_EQ(m.name, "my-llama");
  EXPECT_EQ(m.layers, 3);
  EXPECT_EQ(m.kv(), 1);
  EXPECT_EQ(m.bias, Bias::qkv);
  EXPECT_TRUE(m.tied);
  EXPECT_EQ(m.norm_eps, 1e-6);
  EXPECT_EQ(m.rope_scaling.factor, 8);
  EXPECT_EQ(m.rope_scaling.original_context, 32);
  EXPECT_EQ(m.ffn_size(), 176);  // from the preset
  // Round trip through the description checkpoints record.
  EXPECT_TRUE(model_from_json(model_json(m), "meta").same_architecture(m));
  EXPECT_TRUE(model_from_json(model_json(gpt_preset("qwen2.5-7b")), "meta").same_architecture(gpt_preset("qwen2.5-7b")));
  // A description written before the Llama family reads as GPT-2.
  const GptConfig old = model_from_json(nlohmann::json::parse(R"({"name": "gpt-tiny", "vocab": 256, "context": 64, "layers": 2,
      "channels": 64, "heads": 4})"), "meta");
  EXPECT_TRUE(old.same_architecture(gpt_preset("gpt-tiny")));
}

TEST(ModelConfig, BadModelFilesNameFileAndKey) {
  const std::string bad_key = temp_file("a.toml", "layers = 2\nwidth = 64\n").string();
  expect_config_error([&] { load_model(bad_key); }, bad_key + ": unknown key 'width'");
  const std::string bad_choice = temp_file("b.toml", "norm = \"batchnorm\"\n").string();
  expect_config_error([&] { load_model(bad_choice); }, "key 'norm' must be one of layernorm, rmsnorm, got 'batchnorm'");
  const std::string bad_shape = temp_file("c.toml", "preset = \"llama-tiny\"\nkv_heads = 3\n").string();
  expect_config_error([&] { load_model(bad_shape); }, "heads (4) must be a multiple of kv_heads (3)");
  const std::string bad_type = temp_file("d.toml", "tied = 1\n").string();
  expect_config_error([&] { load_model(bad_type); }, "key 'tied' has the wrong type");
  expect_config_error([&] { load_model("llama4-400b"); }, "unknown model 'llama4-400b'");
  expect_config_error([&] { load_model("/nonexistent/model.toml"); }, "cannot read model file");
}

// The published config.json of Meta-Llama-3-8B (huggingface.co/meta-llama/Meta-Llama-3-8B), every key.
const char* kLlama3Config = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000,
  "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0", "use_cache": true,
  "vocab_size": 128256})";

TEST(ModelConfig, HuggingFaceConfigsOfTheLlamaFamily) {
  const fs::path dir = temp_file("config.json", kLlama3Config).parent_path();
  EXPECT_TRUE(load_model(dir.string()).same_architecture(gpt_preset("llama3-8b")));
  EXPECT_TRUE(load_model((dir / "config.json").string()).same_architecture(gpt_preset("llama3-8b")));
  // Qwen2: biases on q, k and v only; tied for the small ones.
  const GptConfig q = parse_hf_config(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 896, "intermediate_size": 4864,
      "max_position_embeddings": 32768, "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
      "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": true, "vocab_size": 151936,
      "use_sliding_window": false, "sliding_window": 32768, "max_window_layers": 21, "hidden_act": "silu"})", "qwen");
  EXPECT_EQ(q.bias, Bias::qkv);
  EXPECT_TRUE(q.tied);
  EXPECT_EQ(q.num_params(), 494'032'768u);  // Qwen2.5-0.5B: 0.49B
  // Llama 3.1's rope scaling.
  const GptConfig l31 = parse_hf_config(std::string(kLlama3Config).replace(std::string(kLlama3Config).find("\"rope_scaling\": null"), 20,
      R"("rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"})"), "l31");
  EXPECT_EQ(l31.rope_scaling.factor, 8);
  EXPECT_EQ(l31.rope_scaling.original_context, 8192);
}

TEST(ModelConfig, HuggingFaceConfigsThatCannotBeTrainedAreNamed) {
  const std::string base = kLlama3Config;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  expect_config_error([&] { parse_hf_config(with("LlamaForCausalLM", "MixtralForCausalLM"), "'c.json'"); },
                      "'c.json': architecture 'MixtralForCausalLM' is not supported");
  expect_config_error([&] { parse_hf_config(with("\"use_cache\": true", "\"use_cache\": true, \"num_experts\": 8"), "'c.json'"); },
                      "'c.json': unknown key 'num_experts'");
  expect_config_error([&] { parse_hf_config(with("\"silu\"", "\"gelu\""), "'c.json'"); }, "hidden_act 'gelu' is not supported");
  expect_config_error([&] { parse_hf_config(with("\"rope_scaling\": null", R"("rope_scaling": {"type": "linear", "factor": 2.0})"), "'c.json'"); },
                      "key 'rope_scaling.rope_type' is 'linear'");
  expect_config_error([&] { parse_hf_config(with("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5"), "'c.json'"); },
                      "must be a multiple of kv_heads (5)");
  expect_config_error([&] { parse_hf_config(with("\"hidden_size\": 4096", "\"hidden_size\": 4096.5"), "'c.json'"); },
                      "key 'hidden_size' must be a positive integer");
  expect_config_error([&] { parse_hf_config("{not json", "'c.json'"); }, "'c.json' is not valid JSON");
  std::string mistral = with("LlamaForCausalLM", "MistralForCausalLM");
  mistral.insert(mistral.find("\"vocab_size\""), "\"sliding_window\": 4096, ");
  expect_config_error([&] { parse_hf_config(mistral, "'m.json'"); }, "sliding-window attention is not supported");
}

}  // namespace
}  // namespace tierzero
