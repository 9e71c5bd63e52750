// The Llama family against PyTorch (tests/golden/make_llama_golden.py: an
// independent implementation of transformers' Llama and Qwen2 layouts):
// the Hugging Face directories imported (config.json and model.safetensors)
// give the reference's logits, loss and every gradient, and 10 AdamW steps
// follow its losses and final weights; export then import is the identity,
// also from sharded and bf16 files. Tolerances (float32 through other GEMMs
// and summation orders): logits 1e-5 of their largest magnitude, gradients
// 1e-4 of each tensor's, weights after 10 steps 2e-4.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "ckpt/safetensors.h"
#include "core/read_file.h"
#include "fp32_matmul.h"
#include "model/gpt.h"
#include "tierzero/dtype.h"
#include "tierzero/error.h"
#include "tierzero/hugging_face.h"
#include "tierzero/state_reader.h"
#include "torch_reference.h"

#ifndef TZ_GOLDEN_DIR
#error "TZ_GOLDEN_DIR must name tests/golden"
#endif

namespace tierzero {
namespace {
namespace fs = std::filesystem;
const std::string kGolden = TZ_GOLDEN_DIR;

using test::expect_close;
using test::slice;

// One reference model: its imported weights and the reference's tensors under "<name>.".
struct Reference {
  std::string name;
  ModelWeights w;
  GptLayout layout;
  SafeTensorsFile ref = read_safetensors(kGolden + "/llama_reference.safetensors");
  std::vector<int> tokens, targets;
  int B, T;
  explicit Reference(const std::string& n) : name(n), w(load_model_weights(kGolden + "/hf_" + n)), layout(w.model) {
    const SafeTensor& tok = at("tokens");
    B = static_cast<int>(tok.shape[0]), T = static_cast<int>(tok.shape[1]);
    tokens = tok.as_i32();
    targets = at("targets").as_i32();
  }
  const SafeTensor& at(const std::string& key) const { return ref.at(name + "." + key); }
  // The reference's "<prefix><HF name>" tensors, in tierzero's layout (through a file of those names, as the importer reads).
  std::vector<float> params(const std::string& prefix) const {
    SafeTensorsFile f;
    for (const auto& [k, t] : ref.tensors)
      if (k.rfind(name + "." + prefix, 0) == 0) f.tensors[k.substr(name.size() + 1 + prefix.size())] = t;
    const fs::path path = fs::temp_directory_path() / ("tz_llama_ref_" + std::to_string(::getpid()) + "_" + name + "_" + prefix + "safetensors");
    write_safetensors(path.string(), f);
    std::vector<float> out = read_whole(*open_weights(path.string(), w.model), StatePart::master, layout.num_params());
    fs::remove(path);
    return out;
  }
};

class LlamaVsPyTorch : public test::WithFp32Matmul<::testing::TestWithParam<std::string>> {};

TEST_P(LlamaVsPyTorch, LogitsLossAndEveryGradient) {
  const Reference r(GetParam());
  GptModel<float> model(r.layout, r.B, r.T);
  std::vector<float> grads(r.layout.num_params(), 0.0f);
  const double loss = model.forward_backward(r.w.params.data(), grads.data(), r.tokens.data(), r.targets.data());
  EXPECT_NEAR(loss, r.at("loss").as_f64()[0], 1e-5);
  std::vector<float> logits(static_cast<std::size_t>(r.B) * r.T * r.layout.config().vocab);
  model.forward(r.w.params.data(), r.tokens.data(), r.targets.data());
  model.logits(r.w.params.data(), r.w.params.data() + r.layout.units()[r.layout.head_unit()].offset, logits.data());
  expect_close(logits, r.at("logits").as_f32(), 1e-5, "logits");
  const std::vector<float> want = r.params("grad.");
  for (const TensorInfo& t : r.layout.tensors()) expect_close(slice(grads, t), slice(want, t), 1e-4, "grad." + t.name);
}

TEST_P(LlamaVsPyTorch, TenAdamWStepsWithClipping) {
  const Reference r(GetParam());
  std::vector<float> p = r.w.params;
  test::train_like_the_reference(r.layout, r.B, r.T, p, r.tokens, r.targets, r.at("losses").as_f64());
  const std::vector<float> final_w = r.params("final."), grad = r.params("grad.");
  for (const TensorInfo& t : r.layout.tensors())
    test::expect_close_where_conditioned(slice(p, t), slice(final_w, t), slice(grad, t), 2e-4, "final." + t.name);
}

INSTANTIATE_TEST_SUITE_P(Models, LlamaVsPyTorch, ::testing::Values("llama_tiny", "qwen_tiny"));

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tz_hf_llama_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(HfLlama, ExportThenImportIsTheIdentity) {
  for (const char* name : {"llama_tiny", "qwen_tiny"}) {
    const ModelWeights w = load_model_weights(kGolden + "/hf_" + std::string(name));
    const fs::path dir = temp_dir(name);
    write_hf_llama(w.model, w.params, dir.string());
    const ModelWeights back = load_model_weights(dir.string());
    EXPECT_TRUE(back.model.same_architecture(w.model)) << back.model.describe() << " vs " << w.model.describe();
    EXPECT_EQ(back.params, w.params) << name;
    // The same tensors, bit for bit, as transformers stored them (the exporter's layout is the importer's).
    const SafeTensorsFile a = read_safetensors(kGolden + "/hf_" + std::string(name) + "/model.safetensors");
    const SafeTensorsFile b = read_safetensors((dir / "model.safetensors").string());
    ASSERT_EQ(a.tensors.size(), b.tensors.size()) << name;
    for (const auto& [k, t] : a.tensors) EXPECT_EQ(b.at(k).data, t.data) << k;
  }
  EXPECT_THROW(write_hf_llama(gpt_preset("gpt-tiny"), std::vector<float>(gpt_preset("gpt-tiny").num_params()), temp_dir("g").string()),
               ConfigError);
}

// bf16 in shards of at most 25 KB: the index names every tensor's shard,
// config.json says bfloat16, and importing gives the bf16 values exactly;
// writing one fp32 file into the same directory removes the index.
TEST(HfLlama, ExportsBf16InShards) {
  const ModelWeights w = load_model_weights(kGolden + "/hf_llama_tiny");
  const fs::path dir = temp_dir("bf16-shards");
  write_hf_llama(w.model, w.params, dir.string(), {DType::bf16, 25000, std::nullopt});
  ASSERT_TRUE(fs::exists(dir / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir / "model.safetensors"));
  const auto index = nlohmann::json::parse(*read_file((dir / "model.safetensors.index.json").string()));
  std::set<std::string> files;
  for (const auto& [name, file] : index.at("weight_map").items()) files.insert(file.get<std::string>());
  EXPECT_GE(files.size(), 3u);
  for (const std::string& f : files) EXPECT_LE(fs::file_size(dir / f), 25000u + 4096) << f;  // + its header
  EXPECT_EQ(index.at("weight_map").size(), read_safetensors(kGolden + "/hf_llama_tiny/model.safetensors").tensors.size());
  EXPECT_EQ(nlohmann::json::parse(*read_file((dir / "config.json").string())).at("torch_dtype"), "bfloat16");
  std::vector<std::byte> narrow(2 * w.params.size());
  std::vector<float> want(w.params.size());
  from_f32(DType::bf16, w.params.data(), narrow.data(), w.params.size());
  to_f32(DType::bf16, narrow.data(), want.data(), want.size());
  EXPECT_EQ(load_model_weights(dir.string()).params, want);
  write_hf_llama(w.model, w.params, dir.string());
  EXPECT_FALSE(fs::exists(dir / "model.safetensors.index.json"));
  EXPECT_EQ(load_model_weights(dir.string()).params, w.params);
}

TEST(HfLlama, ShardedAndBf16FilesImport) {
  const ModelWeights w = load_model_weights(kGolden + "/hf_llama_tiny");
  const SafeTensorsFile all = read_safetensors(kGolden + "/hf_llama_tiny/model.safetensors");
  const fs::path dir = temp_dir("sharded");
  fs::copy_file(kGolden + "/hf_llama_tiny/config.json", dir / "config.json");
  // Two shards in bf16, split by name; the index maps every tensor to its shard.
  SafeTensorsFile s1, s2;
  nlohmann::json map;
  int i = 0;
  for (const auto& [k, t] : all.tensors) {
    const std::vector<float> v = t.as_f32();
    SafeTensor b{"BF16", t.shape, std::vector<std::byte>(v.size() * 2)};
    from_f32(DType::bf16, v.data(), b.data.data(), v.size());
    (i++ % 2 ? s2 : s1).tensors[k] = b;
    map[k] = i % 2 ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  write_safetensors((dir / "model-00001-of-00002.safetensors").string(), s1);
  write_safetensors((dir / "model-00002-of-00002.safetensors").string(), s2);
  std::ofstream(dir / "model.safetensors.index.json") << nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump();
  const ModelWeights got = load_model_weights(dir.string());
  ASSERT_EQ(got.params.size(), w.params.size());
  std::vector<std::byte> narrow(2 * w.params.size());
  std::vector<float> want(w.params.size());
  from_f32(DType::bf16, w.params.data(), narrow.data(), w.params.size());
  to_f32(DType::bf16, narrow.data(), want.data(), want.size());
  EXPECT_EQ(got.params, want);  // the bf16 values, exactly
  // An index naming a shard that lacks the tensor is a FormatError naming both.
  map[all.tensors.begin()->first] = "model-00002-of-00002.safetensors";
  map[std::next(all.tensors.begin())->first] = "model-00002-of-00002.safetensors";
  std::ofstream(dir / "model.safetensors.index.json") << nlohmann::json{{"weight_map", map}}.dump();
  try {
    load_model_weights(dir.string());
    ADD_FAILURE() << "a wrong index was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find("which does not hold it"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace tierzero
