// The op list and its pricing where they depend on the model's code
// (tierzero/model_code.h, data/model-code): the norms and the rotary
// embedding at the bytes and kernels the code's file counts, priced at those
// bytes (not the engine's elementwise_traffic), and what they keep for the
// backward; the engine's kernels where the code lists nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "sim/compute_model.h"
#include "sim/memory_model.h"
#include "sim/op_list.h"
#include "tierzero/error.h"
#include "tierzero/model_code.h"
#include "tierzero/simulator.h"

namespace tierzero {
namespace {

// Llama 3 8B: grouped queries (8 KV heads of 32), so Q and K differ in width.
GptConfig llama8b() { return gpt_preset("llama3-8b"); }

const Op& find(const std::vector<Op>& ops, const std::string& name, OpPass pass) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& o) { return o.name == name && o.pass == pass; });
  if (it == ops.end()) throw std::runtime_error("no op " + name);
  return *it;
}

TEST(ModelCode, EveryFileParsesWithItsSources) {
  const std::vector<std::string> names = model_code_names();
  EXPECT_EQ(names, (std::vector<std::string>{"fms", "hf-transformers", "megatron-lm-local", "torchtitan"}));
  for (const std::string& n : names) {
    const ModelCode c = model_code(n);
    EXPECT_EQ(c.name, n);
    const bool norm = n != "megatron-lm-local";  // Apex's fused LayerNorm: the engine's kernels
    EXPECT_EQ(c.norm.listed, norm) << n;
    EXPECT_TRUE(c.rope.listed) << n;
    EXPECT_EQ(c.source_of("norm").empty(), !norm) << n;
    EXPECT_FALSE(c.source_of("rope").empty()) << n;
    EXPECT_FALSE(c.source_of("code").empty()) << n;
    EXPECT_EQ(c.norm_saved_bytes > 0, norm) << n;
  }
  EXPECT_FALSE(model_code("").norm.listed);
  EXPECT_FALSE(model_code("engine").rope.listed);
  try {
    model_code("megatron-te");
    ADD_FAILURE() << "an unknown code was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("unknown model code 'megatron-te'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("hf-transformers"), std::string::npos) << e.message();
  }
}

// Hugging Face's RMSNorm: 36 bytes per element in 5 kernels forward, 56 in 8 backward; its rotary embedding 20 in 5
// and 24 in 6 per element of Q and K; without a code the op list's minimum (2a and 3a; 2a and 2a).
TEST(ModelCode, TheOpListCountsTheCodesKernels) {
  const GptConfig m = llama8b();
  const double N = 2.0 * 4096, h = m.channels, kv = static_cast<double>(m.kv()) * m.head_size(), a = 2;
  OpOptions engine;
  OpOptions hf = engine;
  hf.code = model_code("hf-transformers");
  const std::vector<Op> plain = micro_batch_ops(m, 2, 4096, engine), coded = micro_batch_ops(m, 2, 4096, hf);
  ASSERT_EQ(plain.size(), coded.size());
  const Op& n1 = find(coded, "norm1", OpPass::forward);
  EXPECT_TRUE(n1.coded);
  EXPECT_DOUBLE_EQ(n1.bytes, 36 * N * h);
  EXPECT_DOUBLE_EQ(n1.kernels, 5);
  EXPECT_DOUBLE_EQ(n1.count, m.layers);
  const Op& n1g = find(coded, "norm1_grad", OpPass::backward);
  EXPECT_DOUBLE_EQ(n1g.bytes, 56 * N * h);
  EXPECT_DOUBLE_EQ(n1g.kernels, 8);
  EXPECT_DOUBLE_EQ(find(coded, "norm_f", OpPass::forward).bytes, 36 * N * h);
  EXPECT_DOUBLE_EQ(find(coded, "rope", OpPass::forward).bytes, 20 * N * (h + kv));
  EXPECT_DOUBLE_EQ(find(coded, "rope_grad", OpPass::backward).bytes, 24 * N * (h + kv));
  EXPECT_DOUBLE_EQ(find(coded, "rope_grad", OpPass::backward).kernels, 6);
  const Op& p1 = find(plain, "norm1", OpPass::forward);
  EXPECT_FALSE(p1.coded);
  EXPECT_DOUBLE_EQ(p1.bytes, 2 * N * h * a);
  EXPECT_DOUBLE_EQ(find(plain, "norm1_grad", OpPass::backward).bytes, 3 * N * h * a);
  EXPECT_DOUBLE_EQ(find(plain, "rope", OpPass::forward).bytes, 2 * N * (h + kv) * a);
  // Everything else is the same op for op.
  for (std::size_t i = 0; i < plain.size(); ++i) {
    if (plain[i].name.rfind("norm", 0) != 0 && plain[i].name.rfind("rope", 0) != 0) {
      EXPECT_DOUBLE_EQ(plain[i].bytes, coded[i].bytes) << plain[i].name;
    }
  }
  // A full recomputation repeats the code's forward kernels.
  hf.recompute = Recompute{Recompute::Kind::full};
  const std::vector<Op> rec = micro_batch_ops(m, 2, 4096, hf);
  EXPECT_DOUBLE_EQ(find(rec, "norm1", OpPass::recompute).bytes, 36 * N * h);
  EXPECT_TRUE(find(rec, "norm1", OpPass::recompute).coded);
}

// Megatron-LM's local layers (no Transformer Engine): the rotary embedding as PyTorch expressions, 24 bytes per element of
// Q and K in 6 kernels forward and 34 in 9 backward (megatron/model/rotary_pos_embedding.py); its LayerNorm Apex's fused
// one, at the op list's minimum (2a forward, 3a backward).
TEST(ModelCode, MegatronLmsLocalLayersRotateInPyTorchAndNormFused) {
  OpOptions engine, local, hf;
  local.code = model_code("megatron-lm-local");
  hf.code = model_code("hf-transformers");  // 20 and 24 bytes per element of Q and K (the test above)
  const auto ops = [](const OpOptions& o) { return micro_batch_ops(llama8b(), 2, 4096, o); };
  const std::vector<Op> mine = ops(local), theirs = ops(hf), plain = ops(engine);
  const Op& rope = find(mine, "rope", OpPass::forward);
  EXPECT_TRUE(rope.coded);
  EXPECT_DOUBLE_EQ(rope.bytes, find(theirs, "rope", OpPass::forward).bytes / 20 * 24);
  EXPECT_DOUBLE_EQ(rope.kernels, 6);
  const Op& back = find(mine, "rope_grad", OpPass::backward);
  EXPECT_DOUBLE_EQ(back.bytes, find(theirs, "rope_grad", OpPass::backward).bytes / 24 * 34);
  EXPECT_DOUBLE_EQ(back.kernels, 9);
  for (const char* norm : {"norm1", "norm2", "norm_f"}) {
    EXPECT_FALSE(find(mine, norm, OpPass::forward).coded) << norm;
    EXPECT_DOUBLE_EQ(find(mine, norm, OpPass::forward).bytes, find(plain, norm, OpPass::forward).bytes) << norm;
  }
  EXPECT_DOUBLE_EQ(find(mine, "norm1_grad", OpPass::backward).bytes, find(plain, "norm1_grad", OpPass::backward).bytes);
}

// A coded op moves its own bytes: the engine's elementwise_traffic scales the others only.
TEST(ModelCode, ACodedOpIsPricedAtItsOwnBytes) {
  const System sys = load_system("dgx-h100");
  EngineProfile e = engine_profile("fsdp");
  ASSERT_GT(e.elementwise_traffic, 1.5);
  Op op;
  op.kind = OpKind::memory, op.bytes = 64e9, op.kernels = 4;
  const double rate = sys.memory_bandwidth_Bps * sys.device.memory_efficiency;
  EXPECT_NEAR(op_time(op, sys, e), 64e9 * e.elementwise_traffic / rate, 1e-9);
  op.coded = true;
  EXPECT_NEAR(op_time(op, sys, e), 64e9 / rate, 1e-9);
}

// HF's norm keeps its fp32 input and its 16-bit output (6 bytes per element) where a fused one keeps input and
// output (2 x 2): 2 bytes more per element of each of a block's two norms.
TEST(ModelCode, ANormWrittenInFp32KeepsMoreForItsBackward) {
  const GptConfig m = llama8b();
  const double plain = block_activation_bytes_per_token(m, 4096, 2, false, ModelCode{});
  const double hf = block_activation_bytes_per_token(m, 4096, 2, false, model_code("hf-transformers"));
  EXPECT_DOUBLE_EQ(hf - plain, 2 * m.channels * (6 - 4));
}

// The activations another engine keeps come from the block's ops' saved bytes; here in closed form, per token
// and block (h channels, kv the key/value width, F the MLP's, a bytes, on a member of tp; norms and the input
// whole): the norms' inputs and outputs 4 h a and statistics 2 x 8 (LayerNorm) or 2 x 4, Q, K, V and the
// attention's output (2h + 2kv) a / tp, the MLP (SwiGLU's 3F, GELU's 2F) a / tp, FlashAttention's log-sum-exp
// 4 H / tp or eager attention's softmax weights H s a / tp. Full: each block's input, one block's set twice while it
// recomputes; every:2 the input of half the blocks; selective the FlashAttention set; selective-op the input, the
// attention's output and every other matmul's (Llama: 2h + (2h + kv + F) / tp; GPT-2: h + (2h + 2kv + F) / tp), and
// one block's set while it recomputes.
TEST(OpList, TheBlocksSavedBytesAreTheActivationsTheMemoryModelCounts) {
  for (const char* name : {"gpt2-124m", "llama3-8b", "gpt-20b"})
    for (int tp : {1, 2})
      for (const char* attention : {"flash2", "eager"})
        for (const char* recompute : {"none", "full", "every:2", "selective", "selective-op"}) {
          SimInput in;
          in.model = gpt_preset(name);
          in.system = load_system("dgx-h100");
          in.ranks = 16;
          in.micro_batch = 2;
          in.seq_len = 1024;
          in.engine = engine_profile("fsdp");
          in.engine.recompute = {"none", "full", "every", "selective", "selective-op"};
          in.engine.tensor_parallel = TensorParallel::any;  // every policy and degree, on one engine's kernels
          in.attention = attention;
          in.recompute = Recompute::parse(recompute);
          in.mesh = MeshShape{tp, std::nullopt};
          in.plan = fit_to(strategy_plan("zero3"), in.data_topology());
          const SimResult r = simulate(in);
          const std::map<std::string, double> parts(r.memory_bytes.begin(), r.memory_bytes.end());
          const GptConfig& m = in.model;
          const double tokens = 2 * 1024, a = in.engine.activation_bytes, L = m.layers, t = tp;
          const double h = m.channels, kv = static_cast<double>(m.kv()) * m.head_size(), F = m.ffn_size();
          const double mlp = m.mlp == Mlp::swiglu ? 3 * F : 2 * F, stats = m.norm == Norm::layernorm ? 16 : 8;
          const auto block = [&](bool eager) {
            return tokens * (4 * h * a + stats + ((2 * h + 2 * kv + mlp) * a + (eager ? m.heads * 1024.0 * a : 4.0 * m.heads)) / t);
          };
          const bool eager = std::string(attention) == "eager";
          const double input = tokens * h * a;
          const double kept = m.family() == "llama" ? 2 * h + (2 * h + kv + F) / t : h + (2 * h + 2 * kv + F) / t;
          const std::map<std::string, double> expected = {{"none", L * block(eager)},
                                                          {"full", L * input + 2 * block(eager)},
                                                          {"every:2", L / 2 * input + L / 2 * block(eager) + 2 * block(eager)},
                                                          {"selective", L * block(false)},
                                                          {"selective-op", L * kept * a * tokens + block(eager)}};
          EXPECT_DOUBLE_EQ(parts.at("activations"), expected.at(recompute)) << name << " tp " << tp << " " << attention << " " << recompute;
        }
}

// Under FP8 each linear layer keeps the FP8 cast of its input (one byte) for its weight gradient: the norms keep
// their 16-bit input and an FP8 output, the MLP's activation an FP8 output, and the output projection an FP8 copy of
// the attention's output beside the attention's own; per token and block on a member of tp with sequence
// parallelism, 2 (h a + h) + stats over the member's rows, and ((2h + 2kv) a + 4H + h + MLP) / tp, the MLP SwiGLU's
// 2F a + F or GELU's F a + F (Korthikanti et al. 2022's 34 s b h / t less the dropout masks, at 16 bits).
TEST(OpList, UnderFp8TheLinearLayersKeepTheirInputsInOneByte) {
  for (const char* name : {"llama3-8b", "gpt-20b"})
    for (const bool fp8 : {false, true}) {
      const GptConfig m = gpt_preset(name);
      OpOptions o;
      o.attention = "cudnn", o.tp = 4, o.sp = true, o.fp8 = fp8;
      const double a = 2, t = 4, h = m.channels, kv = static_cast<double>(m.kv()) * m.head_size(), F = m.ffn_size(), g = fp8 ? 1 : a;
      const double stats = m.norm == Norm::layernorm ? 16 : 8;
      const double mlp = m.mlp == Mlp::swiglu ? 2 * F * a + F * g : F * a + F * g;
      const double per_token = (2 * h * (a + g) + stats) / t + ((2 * h + 2 * kv) * a + 4.0 * m.heads + (fp8 ? h : 0) + mlp) / t;
      EXPECT_DOUBLE_EQ(block_saved_bytes(m, 2, 1024, o), 2 * 1024 * per_token) << name << (fp8 ? " fp8" : " bf16");
    }
}

// The step with Hugging Face's code is slower than with the engine's kernels by the memory-bound time alone.
TEST(ModelCode, TheSimulatorPricesTheCodeInTheMemoryBoundOps) {
  SimInput in;
  in.model = llama8b();
  in.system = load_system("dgx-h100");
  in.ranks = 8;
  in.micro_batch = 1;
  in.seq_len = 4096;
  in.engine = engine_profile("fsdp");
  in.plan = fit_to(strategy_plan("zero3"), in.topology());
  const SimResult plain = simulate(in);
  in.model_code = model_code("hf-transformers");
  const SimResult hf = simulate(in);
  EXPECT_GT(hf.memory_ops_s, 1.5 * plain.memory_ops_s);
  EXPECT_DOUBLE_EQ(hf.gemm_s, plain.gemm_s);
  EXPECT_DOUBLE_EQ(hf.attention_s, plain.attention_s);
  EXPECT_NEAR(hf.compute_s - plain.compute_s, hf.memory_ops_s - plain.memory_ops_s, 1e-12);
  EXPECT_GT(hf.step_time_s, plain.step_time_s);
}

}  // namespace
}  // namespace tierzero
