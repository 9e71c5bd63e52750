// The GPT layers and the whole model on a CUDA device against the CPU, on
// random non-zero inputs; skipped with the reason where no device exists.
// Tolerances: layers with MatmulType::fp32 agree with the CPU to float
// rounding (relative 1e-4 of the largest value); the model with bf16
// tensor-core GEMMs (8-bit mantissa inputs, fp32 accumulation) to 2e-2
// relative L2 error in every gradient; 20 training steps to 2% in loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "model/ops.h"
#include "gpu_test_util.h"
#include "tierzero/error.h"
#include "gpu/gpu_quant.h"
#include "gpu/device_memory.h"
#include "gpu/gpu_model.h"
#include "test_random.h"
#include "tierzero/optim.h"

namespace tierzero {
namespace {

using test::random_vector;

template <class T>
gpu::DeviceArray<T> upload(const std::vector<T>& v) {
  gpu::DeviceArray<T> a(v.size());
  gpu::to_device(a.data(), v.data(), v.size() * sizeof(T));
  return a;
}

template <class T>
std::vector<T> download(const gpu::DeviceArray<T>& a) {
  std::vector<T> v(a.size());
  gpu::to_host(v.data(), a.data(), v.size() * sizeof(T));
  return v;
}

// max |a - b| <= rel * max |a|
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0, err = 0;
  for (std::size_t i = 0; i < want.size(); ++i) scale = std::max(scale, std::fabs(double(want[i]))), err = std::max(err, std::fabs(double(got[i]) - want[i]));
  EXPECT_GT(scale, 0.0) << what;
  EXPECT_LE(err, rel * scale) << what << ": max error " << err << " of max " << scale;
}

struct Fp32Math {
  Fp32Math() { gpu::GpuContext::current().math = MatmulType::fp32; }
  ~Fp32Math() { gpu::GpuContext::current().math = MatmulType::bf16; }
};

// The attention backward writes every head's score gradients into its
// scratch: a null scratch is refused before anything reaches the device
// (no GPU needed).
TEST(GpuOps, AttentionBackwardRefusesANullScratch) {
  try {
    gpu::attention_backward(nullptr, nullptr, nullptr, nullptr, nullptr, 2, 24, 64, 4, whole_kv_heads(4, 4));
    FAIL() << "accepted a null scratch";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("attention_backward needs a scratch of attention_scratch(Tn, H) = 2304 floats"), std::string::npos)
        << e.message();
  }
}

TEST(GpuOps, LayersMatchTheCpu) {
  TZ_NEED_GPU();
  Fp32Math fp32;
  const int B = 2, T = 24, C = 64, H = 4, N = B * T, V = 96;
  const auto x = random_vector(N * C, 1), w = random_vector(C, 2), b = random_vector(C, 3), dout = random_vector(N * C, 4);
  {  // LayerNorm forward and backward (dx, dw, db accumulate into non-zero buffers)
    std::vector<float> out(N * C), mean(N), rstd(N), dx = random_vector(N * C, 5), dw = random_vector(C, 6), db = random_vector(C, 7);
    auto gx = upload(x), gw = upload(w), gb = upload(b), gout = upload(out), gmean = upload(mean), grstd = upload(rstd);
    auto gdout = upload(dout), gdx = upload(dx), gdw = upload(dw), gdb = upload(db);
    ops::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    gpu::layernorm_forward(gout.data(), gmean.data(), grstd.data(), gx.data(), gw.data(), gb.data(), N, C);
    expect_close(download(gout), out, 1e-5, "layernorm out");
    ops::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
    gpu::layernorm_backward(gdx.data(), gdw.data(), gdb.data(), gdout.data(), gx.data(), gw.data(), gmean.data(), grstd.data(), N, C);
    expect_close(download(gdx), dx, 1e-5, "layernorm dx");
    expect_close(download(gdw), dw, 1e-5, "layernorm dw");
    expect_close(download(gdb), db, 1e-5, "layernorm db");
  }
  {  // matmul with bias, forward and backward
    const int OC = 3 * C;
    const auto W = random_vector(OC * C, 8, 0.1f), bias = random_vector(OC, 9), d = random_vector(N * OC, 10);
    std::vector<float> out(N * OC), dx(N * C), dW = random_vector(OC * C, 11), db = random_vector(OC, 12);
    auto gx = upload(x), gW = upload(W), gbias = upload(bias), gd = upload(d), gout = upload(out), gdx = upload(dx),
         gdW = upload(dW), gdb = upload(db);
    ops::matmul_forward(out.data(), x.data(), W.data(), bias.data(), N, C, OC);
    gpu::matmul_forward(gout.data(), gx.data(), gW.data(), gbias.data(), N, C, OC);
    expect_close(download(gout), out, 1e-5, "matmul out");
    ops::matmul_backward(dx.data(), dW.data(), db.data(), d.data(), x.data(), W.data(), N, C, OC);
    gpu::matmul_backward(gdx.data(), gdW.data(), gdb.data(), gd.data(), gx.data(), gW.data(), N, C, OC);
    expect_close(download(gdx), dx, 1e-5, "matmul dx");
    expect_close(download(gdW), dW, 1e-5, "matmul dW");
    expect_close(download(gdb), db, 1e-5, "matmul db");
  }
  // Causal attention: multi-head, grouped-query, multi-query, and a tensor-parallel member's query heads reading two
  // key/value heads from the middle of a group (the first one's second and third query heads, the next one's first two).
  for (const KvHeads heads : {whole_kv_heads(H, H), whole_kv_heads(H, H / 2), whole_kv_heads(H, 1), KvHeads{2, 3, 1}}) {
    const int KV = heads.count, Wd = C + 2 * KV * (C / H);
    const auto qkv = random_vector(N * Wd, 13);
    std::vector<float> out(N * C), att(B * H * T * T), dqkv(N * Wd), scratch(ops::attention_scratch(T, H));
    auto gqkv = upload(qkv), gout = upload(out), gatt = upload(att), gdout = upload(dout), gdqkv = upload(dqkv);
    gpu::DeviceArray<float> gscratch(gpu::attention_scratch(T, H));
    ops::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, H, heads);
    gpu::attention_forward(gout.data(), gatt.data(), gqkv.data(), B, T, C, H, heads);
    const std::string kv = " (KV " + std::to_string(KV) + ", offset " + std::to_string(heads.offset) + ")";
    expect_close(download(gatt), att, 1e-5, ("attention probabilities" + kv).c_str());
    expect_close(download(gout), out, 1e-5, ("attention out" + kv).c_str());
    ops::attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), scratch.data(), B, T, C, H, heads);
    gpu::attention_backward(gdqkv.data(), gdout.data(), gqkv.data(), gatt.data(), gscratch.data(), B, T, C, H, heads);
    expect_close(download(gdqkv), dqkv, 1e-5, ("attention dqkv" + kv).c_str());
  }
  {  // RMSNorm forward and backward (dx, dw accumulate), RoPE both ways, SwiGLU
    std::vector<float> out(N * C), rstd(N), dx = random_vector(N * C, 20), dw = random_vector(C, 21);
    auto gx = upload(x), gw = upload(w), gout = upload(out), grstd = upload(rstd), gdout = upload(dout), gdx = upload(dx), gdw = upload(dw);
    ops::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6f);
    gpu::rmsnorm_forward(gout.data(), grstd.data(), gx.data(), gw.data(), N, C, 1e-6f);
    expect_close(download(gout), out, 1e-5, "rmsnorm out");
    ops::rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C);
    gpu::rmsnorm_backward(gdx.data(), gdw.data(), gdout.data(), gx.data(), gw.data(), grstd.data(), N, C);
    expect_close(download(gdx), dx, 1e-5, "rmsnorm dx");
    expect_close(download(gdw), dw, 1e-5, "rmsnorm dw");
    const int KV = H / 2, D = C / H, Wd = C + 2 * KV * D;
    std::vector<double> cd(T * D / 2), sd(T * D / 2);
    ops::rope_tables(cd.data(), sd.data(), T, D, 10000, RopeScaling{});
    const std::vector<float> cs(cd.begin(), cd.end()), sn(sd.begin(), sd.end());
    auto qkv = random_vector(N * Wd, 22);
    auto gqkv = upload(qkv), gcs = upload(cs), gsn = upload(sn);
    ops::rope_forward(qkv.data(), cs.data(), sn.data(), B, T, H, KV, D);
    gpu::rope_forward(gqkv.data(), gcs.data(), gsn.data(), B, T, H, KV, D);
    expect_close(download(gqkv), qkv, 1e-6, "rope forward");
    ops::rope_backward(qkv.data(), cs.data(), sn.data(), B, T, H, KV, D);
    gpu::rope_backward(gqkv.data(), gcs.data(), gsn.data(), B, T, H, KV, D);
    expect_close(download(gqkv), qkv, 1e-6, "rope backward");
    const int F = 40;
    const auto gu = random_vector(N * 2 * F, 23), dy = random_vector(N * F, 24);
    std::vector<float> y(N * F), dgu(N * 2 * F);
    auto ggu = upload(gu), gdy = upload(dy), gy = upload(y), gdgu = upload(dgu);
    ops::swiglu_forward(y.data(), gu.data(), N, F);
    gpu::swiglu_forward(gy.data(), ggu.data(), N, F);
    expect_close(download(gy), y, 1e-6, "swiglu");
    ops::swiglu_backward(dgu.data(), gu.data(), dy.data(), N, F);
    gpu::swiglu_backward(gdgu.data(), ggu.data(), gdy.data(), N, F);
    expect_close(download(gdgu), dgu, 1e-6, "swiglu backward");
  }
  {  // GELU, residual, token and position embedding
    std::vector<float> y(N * C), dx(N * C), r(N * C);
    auto gx = upload(x), gy = upload(y), gdout = upload(dout), gdx = upload(dx), gr = upload(r);
    ops::gelu_forward(y.data(), x.data(), y.size());
    gpu::gelu_forward(gy.data(), gx.data(), y.size());
    expect_close(download(gy), y, 1e-6, "gelu");
    ops::gelu_backward(dx.data(), x.data(), dout.data(), dx.size());
    gpu::gelu_backward(gdx.data(), gx.data(), gdout.data(), dx.size());
    expect_close(download(gdx), dx, 1e-6, "gelu backward");
    ops::residual_forward(r.data(), x.data(), dout.data(), r.size());
    gpu::residual_forward(gr.data(), gx.data(), gdout.data(), r.size());
    expect_close(download(gr), r, 0.0, "residual");
    std::vector<int> tokens(N);
    for (int i = 0; i < N; ++i) tokens[i] = (i * 31 + 5) % V;
    const auto wte = random_vector(V * C, 14), wpe = random_vector(T * C, 15);
    std::vector<float> e(N * C), dwte = random_vector(V * C, 16), dwpe = random_vector(T * C, 17);
    auto gtok = upload(tokens);
    auto gwte = upload(wte), gwpe = upload(wpe), ge = upload(e), gdwte = upload(dwte), gdwpe = upload(dwpe);
    ops::encoder_forward(e.data(), tokens.data(), wte.data(), wpe.data(), B, T, C, 0, V);
    gpu::encoder_forward(ge.data(), gtok.data(), gwte.data(), gwpe.data(), B, T, C, 0, V);
    expect_close(download(ge), e, 0.0, "encoder");
    ops::encoder_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, 0, V);
    gpu::encoder_backward(gdwte.data(), gdwpe.data(), gdout.data(), gtok.data(), B, T, C, 0, V);
    expect_close(download(gdwte), dwte, 1e-5, "encoder dwte");
    expect_close(download(gdwpe), dwpe, 1e-5, "encoder dwpe");
  }
  {  // tied head with cross-entropy
    std::vector<int> targets(N);
    for (int i = 0; i < N; ++i) targets[i] = (i * 17 + 3) % V;
    const auto wte = random_vector(V * C, 18, 0.2f);
    std::vector<float> probs(N * V), dx(N * C), dwte = random_vector(V * C, 19);
    auto gt = upload(targets);
    auto gx = upload(x), gwte = upload(wte), gprobs = upload(probs), gdx = upload(dx), gdwte = upload(dwte);
    const double loss = ops::head_forward(probs.data(), x.data(), wte.data(), targets.data(), N, C, V);
    EXPECT_NEAR(gpu::head_forward(gprobs.data(), gx.data(), gwte.data(), gt.data(), N, C, V), loss, 1e-5 * loss);
    expect_close(download(gprobs), probs, 1e-5, "head probabilities");
    ops::head_backward(dx.data(), dwte.data(), probs.data(), x.data(), wte.data(), targets.data(), 0.5f, N, C, V);
    gpu::head_backward(gdx.data(), gdwte.data(), gprobs.data(), gx.data(), gwte.data(), gt.data(), 0.5f, N, C, V, 0);
    expect_close(download(gdx), dx, 1e-5, "head dx");
    expect_close(download(gdwte), dwte, 1e-5, "head dwte");
  }
  {  // a vocabulary-parallel member's steps, on its columns [v0, v0 + Vm) (targets and tokens inside and outside them)
    const int v0 = 40, Vm = 30, G = 3;
    std::vector<int> targets(N);
    for (int i = 0; i < N; ++i) targets[i] = (i * 17 + 3) % V;
    const auto wte = random_vector(Vm * C, 24, 0.2f), maxima = random_vector(G * N, 25);
    std::vector<float> logits(N * Vm), max(N), sums(2 * N), e(N * C), dwte = random_vector(Vm * C, 26), dx(N * C);
    auto gt = upload(targets);
    auto gx = upload(x), gwte = upload(wte), gmaxima = upload(maxima), gdwte = upload(dwte), gdx = upload(dx);
    auto glogits = upload(logits), gmax = upload(max), gsums = upload(sums), ge = upload(e);
    ops::matmul_forward(logits.data(), x.data(), wte.data(), static_cast<const float*>(nullptr), N, C, Vm);
    gpu::matmul_forward(glogits.data(), gx.data(), gwte.data(), nullptr, N, C, Vm);
    ops::vocab_max(max.data(), logits.data(), N, Vm);
    gpu::vocab_max(gmax.data(), glogits.data(), N, Vm);
    expect_close(download(gmax), max, 1e-5, "vocab max");
    ops::vocab_exp_sums(logits.data(), sums.data(), maxima.data(), G, targets.data(), N, Vm, v0);
    gpu::vocab_exp_sums(glogits.data(), gsums.data(), gmaxima.data(), G, gt.data(), N, Vm, v0);
    expect_close(download(gsums), sums, 1e-5, "vocab sums");
    const double loss = ops::vocab_softmax_loss(logits.data(), sums.data(), N, Vm);
    EXPECT_NEAR(gpu::vocab_softmax_loss(glogits.data(), gsums.data(), N, Vm), loss, 1e-5 * std::fabs(loss));
    expect_close(download(glogits), logits, 1e-5, "vocab probabilities");
    ops::head_backward(dx.data(), dwte.data(), logits.data(), x.data(), wte.data(), targets.data(), 0.5f, N, C, Vm, v0);
    gpu::head_backward(gdx.data(), gdwte.data(), glogits.data(), gx.data(), gwte.data(), gt.data(), 0.5f, N, C, Vm, v0);
    expect_close(download(gdx), dx, 1e-5, "vocab head dx");
    expect_close(download(gdwte), dwte, 1e-5, "vocab head dwte");
    ops::encoder_forward(e.data(), targets.data(), wte.data(), static_cast<const float*>(nullptr), B, T, C, v0, Vm);
    gpu::encoder_forward(ge.data(), gt.data(), gwte.data(), nullptr, B, T, C, v0, Vm);
    expect_close(download(ge), e, 0.0, "vocab encoder");
    ops::encoder_backward(dwte.data(), static_cast<float*>(nullptr), dx.data(), targets.data(), B, T, C, v0, Vm);
    gpu::encoder_backward(gdwte.data(), nullptr, gdx.data(), gt.data(), B, T, C, v0, Vm);
    expect_close(download(gdwte), dwte, 1e-5, "vocab encoder dwte");
  }
  {  // AdamW
    const std::size_t n = 1000;
    auto p = random_vector(n, 20), g = random_vector(n, 21), m = random_vector(n, 22, 0.1f), v = random_vector(n, 23, 0.1f);
    for (float& e : v) e = std::fabs(e);
    auto gp = upload(p), gg = upload(g), gm = upload(m), gv = upload(v);
    AdamWConfig c;
    adamw_update(p.data(), g.data(), m.data(), v.data(), n, c, 3, 1e-3f, true);
    gpu::adamw(gp.data(), gg.data(), gm.data(), gv.data(), n, 1e-3f, c.beta1, c.beta2, c.eps, c.weight_decay, 3);
    expect_close(download(gp), p, 1e-6, "adamw params");
    expect_close(download(gm), m, 1e-6, "adamw m");
    expect_close(download(gv), v, 1e-6, "adamw v");
  }
}

// The embedding's backward with every token id repeated many times in the
// batch, out of order: each id's rows are summed in position order, as the
// CPU does (no atomics), so the GPU gives the CPU's bits, the same every run.
TEST(GpuOps, EmbeddingBackwardGivesTheCpusBitsWithRepeatedTokens) {
  TZ_NEED_GPU();
  const int B = 3, T = 50, C = 70, V = 9;
  std::vector<int> tokens(B * T);
  for (int i = 0; i < B * T; ++i) tokens[i] = (i * i * 7 + 3) % V;
  std::vector<float> dout = random_vector(static_cast<std::size_t>(B) * T * C, 31), dwte = random_vector(V * C, 32),
                     dwpe = random_vector(T * C, 33);
  auto gd = upload(dout), gw = upload(dwte), gp = upload(dwpe);
  auto gt = upload(tokens);
  ops::encoder_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, 0, V);
  for (int run = 0; run < 2; ++run) {
    auto w = upload(download(gw)), pe = upload(download(gp));
    gpu::encoder_backward(w.data(), pe.data(), gd.data(), gt.data(), B, T, C, 0, V);
    EXPECT_TRUE(download(w) == dwte) << "dwte, run " << run;
    EXPECT_TRUE(download(pe) == dwpe) << "dwpe, run " << run;
  }
}

struct TinyModel {
  GptLayout layout;
  int B = 4, T = 64;
  std::vector<float> params;
  std::vector<int> tokens, targets;
  explicit TinyModel(unsigned seed, const char* preset = "gpt-tiny") : layout(gpt_preset(preset)) {
    params.resize(layout.num_params());
    gpt_init(layout, seed, params.data());
    batch(0);
  }
  void batch(int step) {
    tokens.resize(B * T), targets.resize(B * T);
    for (int i = 0; i < B * T; ++i) tokens[i] = (i * 37 + 11 * step + 3) % 256, targets[i] = (tokens[i] * 7 + 1) % 256;
  }
};

double relative_l2(const std::vector<float>& a, const std::vector<float>& b, std::size_t off, std::size_t n) {
  double num = 0, den = 0;
  for (std::size_t i = off; i < off + n; ++i) num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]), den += double(b[i]) * b[i];
  return std::sqrt(num / std::max(den, 1e-30));
}

TEST(GpuModel, ForwardBackwardMatchesTheCpuInBf16) {
  TZ_NEED_GPU();
  for (const char* preset : {"gpt-tiny", "llama-tiny"}) {
  SCOPED_TRACE(preset);
  TinyModel m(5, preset);
  GptModel<float> cpu(m.layout, m.B, m.T);
  std::vector<float> grads(m.params.size(), 0.0f);
  const double loss = cpu.forward_backward(m.params.data(), grads.data(), m.tokens.data(), m.targets.data());

  GptModel<float, gpu::DeviceOps> dev(m.layout, m.B, m.T);
  auto gp = upload(m.params);
  auto gt = upload(m.tokens), gy = upload(m.targets);
  gpu::DeviceArray<float> gg(m.params.size());
  gpu::fill_zero(gg.data(), gg.size() * sizeof(float));
  const double dloss = dev.forward_backward(gp.data(), gg.data(), gt.data(), gy.data());
  EXPECT_NEAR(dloss, loss, 1e-2 * loss);
  const auto got = download(gg);
  for (const TensorInfo& t : m.layout.tensors())
    EXPECT_LT(relative_l2(got, grads, t.offset, t.numel), 2e-2) << t.name;
  }
}

TEST(GpuModel, TwentyTrainingStepsFollowTheCpuLossCurve) {
  TZ_NEED_GPU();
  TinyModel m(7);
  const std::size_t n = m.params.size();
  AdamWConfig c;
  const float lr = 3e-3f;
  std::vector<double> cpu_losses, gpu_losses;
  {
    GptModel<float> model(m.layout, m.B, m.T);
    std::vector<float> p = m.params, g(n), mo(n), v(n);
    for (int s = 0; s < 20; ++s) {
      m.batch(s);
      std::fill(g.begin(), g.end(), 0.0f);
      cpu_losses.push_back(model.forward_backward(p.data(), g.data(), m.tokens.data(), m.targets.data()));
      adamw_update(p.data(), g.data(), mo.data(), v.data(), n, c, s + 1, lr, true);
    }
  }
  {
    GptModel<float, gpu::DeviceOps> model(m.layout, m.B, m.T);
    auto p = upload(m.params);
    gpu::DeviceArray<float> g(n), mo(n), v(n);
    gpu::fill_zero(mo.data(), n * sizeof(float));
    gpu::fill_zero(v.data(), n * sizeof(float));
    for (int s = 0; s < 20; ++s) {
      m.batch(s);
      auto tok = upload(m.tokens), tgt = upload(m.targets);
      gpu::fill_zero(g.data(), n * sizeof(float));
      gpu_losses.push_back(model.forward_backward(p.data(), g.data(), tok.data(), tgt.data()));
      gpu::adamw(p.data(), g.data(), mo.data(), v.data(), n, lr, c.beta1, c.beta2, c.eps, c.weight_decay, s + 1);
    }
  }
  EXPECT_LT(cpu_losses.back(), 0.9 * cpu_losses.front());  // it learns
  for (int s = 0; s < 20; ++s) EXPECT_NEAR(gpu_losses[s], cpu_losses[s], 0.02 * cpu_losses[s]) << "step " << s;
}

// Two identical runs (the same weights, batches and five AdamW steps, bf16
// tensor cores) give identical bits: no kernel adds in a run-dependent order.
TEST(GpuModel, TwoIdenticalRunsGiveIdenticalBits) {
  TZ_NEED_GPU();
  const auto run = [] {
    TinyModel m(13);
    const std::size_t n = m.params.size();
    GptModel<float, gpu::DeviceOps> model(m.layout, m.B, m.T);
    auto p = upload(m.params);
    gpu::DeviceArray<float> g(n), mo(n), v(n);
    gpu::fill_zero(mo.data(), n * sizeof(float));
    gpu::fill_zero(v.data(), n * sizeof(float));
    const AdamWConfig c;
    for (int s = 0; s < 5; ++s) {
      m.batch(s);
      auto tok = upload(m.tokens), tgt = upload(m.targets);
      gpu::fill_zero(g.data(), n * sizeof(float));
      model.forward_backward(p.data(), g.data(), tok.data(), tgt.data());
      gpu::adamw(p.data(), g.data(), mo.data(), v.data(), n, 3e-3f, c.beta1, c.beta2, c.eps, c.weight_decay, s + 1);
    }
    return download(p);
  };
  const std::vector<float> first = run();
  EXPECT_TRUE(run() == first);
}

TEST(GpuModel, TheSteadyStateStepDoesNotAllocate) {
  TZ_NEED_GPU();
  TinyModel m(9);
  GptModel<float, gpu::DeviceOps> model(m.layout, m.B, m.T);
  auto p = upload(m.params);
  auto tok = upload(m.tokens), tgt = upload(m.targets);
  gpu::DeviceArray<float> g(m.params.size());
  model.forward_backward(p.data(), g.data(), tok.data(), tgt.data());
  const std::uint64_t before = gpu::device_allocations();
  for (int s = 0; s < 3; ++s) model.forward_backward(p.data(), g.data(), tok.data(), tgt.data());
  EXPECT_EQ(gpu::device_allocations(), before);
}

// The engine's AdamW (device Memory) on one segment larger than a capped
// grid's single pass (gpt2-124m's wte is 38.6M elements): every element
// updated, each bit for bit as the CPU's adamw_update.
TEST(GpuMemory, AdamWOnA40MElementSegmentMatchesTheCpuBitForBit) {
  TZ_NEED_GPU();
  const std::size_t n = 40'000'000;
  std::vector<float> p = random_vector(n, 21), g = random_vector(n, 22, 1e-2f), m = random_vector(n, 23, 1e-3f), v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = g[i] * g[i];
  auto gp = upload(p), gg = upload(g), gm = upload(m), gv = upload(v);
  AdamWConfig c;
  gpu::device_step_ops().adamw(gp.data(), gg.data(), gm.data(), gv.data(), n, c, 7, 3e-4f, true);
  adamw_update(p.data(), g.data(), m.data(), v.data(), n, c, 7, 3e-4f, true);
  gpu::device_memory().fence();
  EXPECT_TRUE(download(gp) == p) << "params";
  EXPECT_TRUE(download(gm) == m) << "m";
  EXPECT_TRUE(download(gv) == v) << "v";
}

}  // namespace
}  // namespace tierzero
