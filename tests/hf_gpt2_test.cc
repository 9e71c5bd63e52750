// Hugging Face GPT-2 interop against an independent PyTorch model of that
// layout (tests/golden/make_hf_gpt2_golden.py): the committed HF directory
// imported by tierzero gives PyTorch's logits; tierzero's export of those
// weights is the same file content (names, shapes, Conv1D transposes,
// values); and export -> import is the identity.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "tierzero/checkpoint.h"
#include "tierzero/error.h"
#include "model/gpt.h"
#include "tierzero/hugging_face.h"
#include "tierzero/state_reader.h"
#include "ckpt/safetensors.h"

namespace tierzero {
namespace {
namespace fs = std::filesystem;
const std::string kGolden = TZ_GOLDEN_DIR;

fs::path temp_dir(const char* name) {
  const fs::path p = fs::temp_directory_path() / ("tz_hf_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(p);
  return p;
}

TEST(HfGpt2, ImportGivesPyTorchsLogits) {
  const ModelWeights w = load_model_weights(kGolden + "/hf_gpt2");
  EXPECT_EQ(w.model.vocab, 256);
  EXPECT_EQ(w.model.context, 16);
  EXPECT_EQ(w.model.layers, 2);
  EXPECT_EQ(w.model.channels, 32);
  EXPECT_EQ(w.model.heads, 4);
  const SafeTensorsFile ref = read_safetensors(kGolden + "/hf_gpt2_reference.safetensors");
  const std::vector<int> tokens = ref.at("tokens").as_i32();
  const std::vector<float> want = ref.at("logits").as_f32();
  const int B = static_cast<int>(ref.at("tokens").shape[0]), T = static_cast<int>(ref.at("tokens").shape[1]);
  const GptLayout layout(w.model);
  GptModel<float> model(layout, B, T);
  model.forward(w.params.data(), tokens.data(), tokens.data());
  std::vector<float> got(want.size());
  model.logits(w.params.data(), w.params.data() + layout.units()[layout.head_unit()].offset, got.data());
  double scale = 0, worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  EXPECT_LE(worst, 1e-5 * scale) << "max |logit difference| " << worst << " of " << scale;
  // The same through --init's reader, from the directory and from the file.
  for (const std::string& path : {kGolden + "/hf_gpt2", kGolden + "/hf_gpt2/model.safetensors"})
    EXPECT_EQ(read_whole(*open_weights(path, w.model), StatePart::master, w.params.size()), w.params) << path;
}

TEST(HfGpt2, ExportWritesTransformersLayoutExactly) {
  const ModelWeights w = load_model_weights(kGolden + "/hf_gpt2");
  const fs::path dir = temp_dir("export");
  write_hf_gpt2(w.model, w.params, dir.string());
  const SafeTensorsFile mine = read_safetensors((dir / "model.safetensors").string());
  const SafeTensorsFile theirs = read_safetensors(kGolden + "/hf_gpt2/model.safetensors");
  ASSERT_EQ(mine.tensors.size(), theirs.tensors.size());
  for (const auto& [name, t] : theirs.tensors) {
    ASSERT_TRUE(mine.tensors.count(name)) << name;
    EXPECT_EQ(mine.at(name).shape, t.shape) << name;
    EXPECT_EQ(mine.at(name).as_f32(), t.as_f32()) << name;
  }
  const GptConfig c = read_hf_gpt2_config((dir / "config.json").string());
  EXPECT_EQ(c.vocab, 256);
  EXPECT_EQ(c.context, 16);
  EXPECT_EQ(c.channels, 32);
  // Round trip: export -> import is the identity.
  EXPECT_EQ(load_model_weights(dir.string()).params, w.params);
  fs::remove_all(dir);
}

void expect_format_error(const std::string& path, const std::string& fragment) {
  try {
    load_model_weights(path);
    FAIL() << path << " was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find(fragment), std::string::npos) << e.message();
  }
}

TEST(HfGpt2, RejectsOtherModelsAndDamagedFiles) {
  const fs::path dir = temp_dir("bad");
  fs::create_directories(dir);
  fs::copy_file(kGolden + "/hf_gpt2/model.safetensors", dir / "model.safetensors");
  std::ofstream(dir / "config.json") << R"({"model_type": "llama", "vocab_size": 256})";
  expect_format_error(dir.string(), "missing key 'max_position_embeddings'");
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 256, "max_position_embeddings": 16,
    "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 64})";
  expect_format_error(dir.string(), "holds GPT-2 tensors, but the model is hf-llama: V 256, T 16, L 2, C 32, H 4, KV 4, F 64, rmsnorm");
  std::ofstream(dir / "config.json") << R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 16, "n_embd": 32,
    "n_layer": 3, "n_head": 4})";
  expect_format_error(dir.string(), "has no tensor 'transformer.h.2.ln_1.weight'");
  std::ofstream(dir / "config.json") << R"({"model_type": "gpt2", "vocab_size": 512, "n_positions": 16, "n_embd": 32,
    "n_layer": 2, "n_head": 4})";
  expect_format_error(dir.string(), "tensor 'transformer.wte.weight' has the wrong shape");
  std::ofstream(dir / "config.json") << R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 16, "n_embd": 32,
    "n_layer": 2, "n_head": 4, "activation_function": "relu"})";
  expect_format_error(dir.string(), "activation_function 'relu'");
  fs::remove(dir / "config.json");
  expect_format_error((dir / "model.safetensors").string(), "no config.json beside it");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tierzero
