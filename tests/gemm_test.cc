// The CPU GEMMs (model/gemm.h): fp32 against a double-precision product
// for every transpose, leading dimension, alpha and beta; bf16 against the
// exact product of the bf16-rounded operands (so it is bf16 inputs with
// fp32 accumulation, not fp32), for hand-picked cases and for every product
// shape both model families run, and the GPT layers computed with bf16
// GEMMs against fp32 within bf16's error bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "model/cpu_peaks.h"
#include "model/gemm.h"
#include "model/ops.h"
#include "model/vec_kernels.h"
#include "test_random.h"
#include "tierzero/error.h"
#include "tierzero/trainer.h"

namespace tierzero {
namespace {

using test::random_vector;

float round_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }

// The calling thread's matmul for one scope.
struct MatmulScope {
  explicit MatmulScope(MatmulType t) : before(ops::matmul()) { ops::set_matmul(t); }
  ~MatmulScope() { ops::set_matmul(before); }
  MatmulType before;
};

struct Case {
  bool ta, tb;
  int m, n, k, pad;
  float alpha, beta;
};

// C = alpha op(A) op(B) + beta C in double, with the operands passed through `in` first.
template <class F>
std::vector<double> reference(const Case& c, const std::vector<float>& a, int lda, const std::vector<float>& b, int ldb,
                              const std::vector<float>& c0, int ldc, F in, std::vector<double>* abs_sum) {
  std::vector<double> out(c0.begin(), c0.end());
  abs_sum->assign(out.size(), 0.0);
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j) {
      double s = 0, s_abs = 0;
      for (int p = 0; p < c.k; ++p) {
        const double x = in(c.ta ? a[static_cast<std::size_t>(p) * lda + i] : a[static_cast<std::size_t>(i) * lda + p]);
        const double y = in(c.tb ? b[static_cast<std::size_t>(j) * ldb + p] : b[static_cast<std::size_t>(p) * ldb + j]);
        s += x * y, s_abs += std::abs(x * y);
      }
      const std::size_t o = static_cast<std::size_t>(i) * ldc + j;
      out[o] = c.alpha * s + c.beta * c0[o];
      (*abs_sum)[o] = std::abs(c.alpha) * s_abs + std::abs(c.beta * c0[o]);
    }
  return out;
}

// Runs one case with the thread's current math; returns the largest error
// against `in`'s reference relative to the sum of |terms| (the scale of
// fp32 accumulation error), and checks that padding columns are untouched.
template <class F>
double run_case(const Case& c, F in) {
  const int lda = (c.ta ? c.m : c.k) + c.pad, ldb = (c.tb ? c.k : c.n) + c.pad, ldc = c.n + c.pad;
  const auto a = random_vector(static_cast<std::size_t>(c.ta ? c.k : c.m) * lda, 1);
  const auto b = random_vector(static_cast<std::size_t>(c.tb ? c.n : c.k) * ldb, 2);
  auto out = random_vector(static_cast<std::size_t>(c.m) * ldc, 3);
  const std::vector<float> c0 = out;
  std::vector<double> abs_sum;
  const auto want = reference(c, a, lda, b, ldb, c0, ldc, in, &abs_sum);
  ops::gemm<float>(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta, out.data(), ldc);
  double worst = 0;
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < ldc; ++j) {
      const std::size_t o = static_cast<std::size_t>(i) * ldc + j;
      if (j >= c.n) {
        EXPECT_EQ(out[o], c0[o]) << "padding column " << j << " written";
        continue;
      }
      worst = std::max(worst, std::abs(out[o] - want[o]) / (abs_sum[o] + 1e-30));
    }
  return worst;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float beta : {0.0f, 1.0f, 0.5f}) v.push_back({ta, tb, 37, 29, 53, ta || tb ? 3 : 0, ta ? 0.125f : 1.0f, beta});
  v.push_back({false, true, 256, 300, 64, 0, 1.0f, 0.0f});  // attention's q k^T shape
  v.push_back({true, false, 96, 64, 512, 5, 1.0f, 1.0f});   // a weight gradient, accumulated
  return v;
}

TEST(Gemm, Fp32MatchesDoubleForEveryLayout) {
  MatmulScope fp32(MatmulType::fp32);
  for (const Case& c : cases())
    EXPECT_LT(run_case(c, [](float x) { return x; }), 1e-5)
        << "ta " << c.ta << " tb " << c.tb << " m " << c.m << " n " << c.n << " k " << c.k << " beta " << c.beta;
}

TEST(Gemm, Bf16IsTheProductOfRoundedInputsAccumulatedInFp32) {
  if (!ops::cpu_has_bf16_units()) GTEST_SKIP() << "no bf16 matrix units: " << ops::gemm_info();
  MatmulScope bf16(MatmulType::bf16);
  ASSERT_EQ(ops::matmul(), MatmulType::bf16);
  for (const Case& c : cases()) {
    // Against the exact product of the rounded operands: fp32 accumulation error only.
    EXPECT_LT(run_case(c, round_bf16), 1e-5) << "ta " << c.ta << " tb " << c.tb << " m " << c.m << " k " << c.k;
    // Against the fp32 operands: bf16 rounding shows (2^-9 per operand), so this is not an fp32 product.
    const double vs_fp32 = run_case(c, [](float x) { return x; });
    EXPECT_GT(vs_fp32, 1e-4) << "bf16 GEMM looks like fp32";
    EXPECT_LT(vs_fp32, 2 * 0x1p-8);
  }
}

// Error bounds, relative to the sum of |terms| of an output (run_case's
// measure). fp32's unit roundoff u = 2^-24: any order of summing k terms,
// with alpha's scaling and beta's sum two more roundings, is within
// gamma(k + 2) = (k + 2) u / (1 - (k + 2) u) (Higham, Accuracy and
// Stability of Numerical Algorithms, 2nd ed., eq. 3.5). A product of two
// bf16 values is exact in fp32 (8 + 8 significant bits), so bf16 inputs
// with fp32 accumulation are within gamma(k + 2) of the exact product of
// the rounded operands; against the fp32 operands each product is further
// off by at most (1 + 2^-9)^2 - 1 = 2^-8 + 2^-18 (bf16 rounds to nearest
// with 8 significant bits: 2^-9 relative).
double gamma_fp32(int terms) {
  const double nu = terms * 0x1p-24;
  return nu / (1 - nu);
}
double bf16_vs_fp32_bound(int k) {
  const double rounding = 0x1p-8 + 0x1p-18;
  return rounding + gamma_fp32(k + 2) * (1 + rounding);
}

// Every bf16 product gpt-tiny and llama-tiny run in a training step at
// micro-batch 1, 2, 4 and 8 (the shapes recorded by the GEMM itself, each
// model and batch on a fresh thread), computed again on random operands on
// that thread, through the primitive the model used: within gamma(k + 2) of
// the product of the rounded operands and within bf16_vs_fp32_bound(k) of
// the fp32 product. Fails naming the shape and oneDNN's implementation
// (e.g. "64x64x16 NT on gemm:jit"); the bounds hold for any correct bf16
// path on any CPU, so only a wrong one fails.
TEST(Gemm, Bf16ProductsOfBothModelFamiliesAreWithinTheirBound) {
  if (!ops::cpu_has_bf16_units()) GTEST_SKIP() << "no bf16 matrix units: " << ops::gemm_info();
  const TokenData data = TokenData::builtin();
  std::set<std::string> impls;
  double largest_vs_fp32 = 0;
  for (const char* model : {"gpt-tiny", "llama-tiny"})
    for (int micro_batch : {1, 2, 4, 8})
      std::thread([&] {
        TrainConfig c;
        c.model = gpt_preset(model), c.steps = 1, c.micro_batch = micro_batch, c.matmul = MatmulType::bf16;
        LocalTrainer trainer(c, data);
        trainer.step();
        ASSERT_EQ(ops::matmul(), MatmulType::bf16);
        const auto kernels = ops::bf16_gemm_kernels();
        EXPECT_GE(kernels.size(), 4u) << model << ": forward and backward products of every layer kind";
        for (const ops::Bf16GemmKernel& g : kernels) {
          const std::string where = std::string(model) + " micro-batch " + std::to_string(micro_batch) + ": " + g.shape() +
                                    " alpha " + std::to_string(g.alpha) + " beta " + std::to_string(g.beta) + " on " + g.impl;
          impls.insert(g.impl);
          const Case c{g.trans_a, g.trans_b, g.m, g.n, g.k, g.ldc - g.n, g.alpha, g.beta};
          EXPECT_LE(run_case(c, round_bf16), gamma_fp32(g.k + 2)) << where;
          const double vs_fp32 = run_case(c, [](float x) { return x; });
          EXPECT_LE(vs_fp32, bf16_vs_fp32_bound(g.k)) << where;
          largest_vs_fp32 = std::max(largest_vs_fp32, vs_fp32);
        }
      }).join();
  // fp32 products would stay within gamma(k + 2) < 2^-13 of the fp32 reference.
  EXPECT_GT(largest_vs_fp32, 0x1p-13) << "the bf16 products look like fp32 ones";
  std::string names;
  for (const std::string& i : impls) names += " " + i;
  RecordProperty("bf16_implementations", names);
  std::cout << "bf16 products ran on:" << names << "\n";
}

// The operands' conversion: the portable loop is dtype.h's f32_to_bf16 for
// every pattern (ties, NaN, Inf, denormals, strided rows); the native one
// (AVX512-BF16, where present) too, except that it flushes fp32 denormals.
TEST(Gemm, Bf16ConversionIsNearestEven) {
  std::vector<float> src;
  for (std::uint32_t u : {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f800000u, 0xff800000u, 0x7fc00001u, 0xffa00000u, 0x00000001u,
                          0x807fffffu, 0x00800000u, 0x7f7fffffu, 0x80000000u})
    src.push_back(bits_as<float>(u));
  const auto noise = random_vector(3 * 41 - src.size(), 5);
  src.insert(src.end(), noise.begin(), noise.end());
  const int rows = 3, cols = 37, ld = 41;  // strided: 4 columns of each row skipped
  std::vector<std::uint16_t> portable(rows * cols), native(rows * cols);
  ops::to_bf16_rows_portable(portable.data(), src.data(), rows, cols, ld);
  ops::to_bf16_rows(native.data(), src.data(), rows, cols, ld);
  const bool flushes = ops::to_bf16_rows_is_native();  // elsewhere to_bf16_rows is the portable loop
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const float x = src[static_cast<std::size_t>(r) * ld + c];
      const std::uint16_t want = f32_to_bf16(x);
      EXPECT_EQ(portable[r * cols + c], want) << r << "," << c;
      const bool denormal = flushes && std::fpclassify(x) == FP_SUBNORMAL;
      EXPECT_EQ(native[r * cols + c], denormal ? static_cast<std::uint16_t>(want & 0x8000u) : want) << r << "," << c;
    }
}

TEST(Gemm, InfoNamesTheKernels) {
  const std::string info = ops::gemm_info();
  EXPECT_NE(info.find("fp32: oneDNN"), std::string::npos) << info;
  EXPECT_NE(info.find("fp64: OpenBLAS"), std::string::npos) << info;
  const std::string cpu = ops::cpu_model_name();
#if defined(__x86_64__)
  EXPECT_NE(cpu.find(" (family "), std::string::npos) << cpu;
  EXPECT_NE(cpu.find(", model "), std::string::npos) << cpu;
  EXPECT_NE(cpu.substr(0, 8), "unknown ") << cpu;
#else
  EXPECT_FALSE(cpu.empty());
#endif
}

TEST(Gemm, ResolveMatmul) {
  EXPECT_EQ(resolve_matmul(MatmulType::automatic, DType::bf16, Bf16Units::faster), MatmulType::bf16);
  EXPECT_EQ(resolve_matmul(MatmulType::automatic, DType::bf16, Bf16Units::slower), MatmulType::fp32);
  EXPECT_EQ(resolve_matmul(MatmulType::automatic, DType::f32, Bf16Units::faster), MatmulType::fp32);
  EXPECT_EQ(resolve_matmul(MatmulType::automatic, DType::f16, Bf16Units::faster), MatmulType::fp32);
  EXPECT_EQ(resolve_matmul(MatmulType::bf16, DType::f32, Bf16Units::faster), MatmulType::bf16);
  EXPECT_EQ(resolve_matmul(MatmulType::bf16, DType::f32, Bf16Units::slower), MatmulType::bf16);  // asked for: done
  EXPECT_EQ(resolve_matmul(MatmulType::bf16, DType::bf16, Bf16Units::none), MatmulType::fp32);
  EXPECT_EQ(resolve_matmul(MatmulType::fp32, DType::bf16, Bf16Units::faster), MatmulType::fp32);
  EXPECT_EQ(parse_matmul_type("auto"), MatmulType::automatic);
  EXPECT_THROW(parse_matmul_type("tf32"), ConfigError);
}

// The measured peaks: plausible rates, classified by the stated rule,
// measured once, and the classification the trainer uses.
TEST(Gemm, CpuPeaksClassifyTheBf16Units) {
  const ops::CpuPeaks& p = ops::cpu_peaks();
  EXPECT_EQ(&p, &ops::cpu_peaks());
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2: no FMA probe";
  EXPECT_GT(p.fp32_gflops, 1.0);
  EXPECT_LT(p.fp32_gflops, 1e4);  // one thread: a few hundred at most
  EXPECT_EQ(p.bf16_dot_gflops > 0, static_cast<bool>(__builtin_cpu_supports("avx512bf16")));
  EXPECT_EQ(p.bf16_faster(), p.amx || p.bf16_vs_fp32() >= 1.25);
  const Bf16Units want = !ops::cpu_has_bf16_units() ? Bf16Units::none : p.bf16_faster() ? Bf16Units::faster : Bf16Units::slower;
  EXPECT_EQ(ops::cpu_bf16_units(), want) << ops::gemm_info();
}

// Largest |x - y| over the largest |y|.
double rel_max_error(const std::vector<float>& x, const std::vector<float>& y) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < x.size(); ++i) diff = std::max(diff, std::abs(double(x[i]) - y[i])), scale = std::max(scale, std::abs(double(y[i])));
  return diff / scale;
}

// Each GEMM layer's outputs with bf16 GEMMs against fp32: within 1% of the
// tensor's largest value (bf16 keeps 8 significant bits: 2^-9 relative per
// operand) and not identical.
TEST(Gemm, Bf16LayersWithinBoundOfFp32) {
  if (!ops::cpu_has_bf16_units()) GTEST_SKIP() << "no bf16 matrix units: " << ops::gemm_info();
  constexpr int B = 2, T = 64, C = 96, H = 4, KV = 2, V = 200, F = 256;
  const int N = B * T, W = C + 2 * KV * (C / H);
  const auto x = random_vector(static_cast<std::size_t>(N) * C, 11);
  const auto w = random_vector(static_cast<std::size_t>(F) * C, 12, 0.05f);
  const auto bias = random_vector(F, 13, 0.05f);
  const auto dout = random_vector(static_cast<std::size_t>(N) * F, 14);
  const auto qkv = random_vector(static_cast<std::size_t>(N) * W, 15);
  const auto datt = random_vector(static_cast<std::size_t>(N) * C, 16);
  const auto wte = random_vector(static_cast<std::size_t>(V) * C, 17, 0.1f);
  std::vector<int> targets(N);
  for (int i = 0; i < N; ++i) targets[i] = (i * 7) % V;

  struct Out {
    std::vector<float> mm, dx, dw, att_out, dqkv, probs, head_dx, head_dw;
    double loss = 0;
  };
  auto run = [&](MatmulType t) {
    MatmulScope scope(t);
    Out o;
    o.mm.resize(static_cast<std::size_t>(N) * F);
    ops::matmul_forward(o.mm.data(), x.data(), w.data(), bias.data(), N, C, F);
    o.dx.resize(x.size()), o.dw.assign(w.size(), 0.0f);
    std::vector<float> db(F, 0.0f);
    ops::matmul_backward(o.dx.data(), o.dw.data(), db.data(), dout.data(), x.data(), w.data(), N, C, F);
    o.att_out.resize(static_cast<std::size_t>(N) * C);
    std::vector<float> att(static_cast<std::size_t>(B) * H * T * T), scratch(ops::attention_scratch(T, H));
    ops::attention_forward(o.att_out.data(), att.data(), qkv.data(), B, T, C, H, whole_kv_heads(H, KV));
    o.dqkv.resize(qkv.size());
    ops::attention_backward(o.dqkv.data(), datt.data(), qkv.data(), att.data(), scratch.data(), B, T, C, H, whole_kv_heads(H, KV));
    o.probs.resize(static_cast<std::size_t>(N) * V);
    o.loss = ops::head_forward(o.probs.data(), x.data(), wte.data(), targets.data(), N, C, V);
    o.head_dx.resize(x.size()), o.head_dw.assign(wte.size(), 0.0f);
    ops::head_backward(o.head_dx.data(), o.head_dw.data(), o.probs.data(), x.data(), wte.data(), targets.data(), 1.0f, N, C, V);
    return o;
  };
  const Out f = run(MatmulType::fp32), h = run(MatmulType::bf16);
  const std::pair<const char*, std::pair<const std::vector<float>*, const std::vector<float>*>> pairs[] = {
      {"matmul out", {&h.mm, &f.mm}},          {"matmul dx", {&h.dx, &f.dx}},
      {"matmul dw", {&h.dw, &f.dw}},           {"attention out", {&h.att_out, &f.att_out}},
      {"attention dqkv", {&h.dqkv, &f.dqkv}},  {"head dlogits", {&h.probs, &f.probs}},
      {"head dx", {&h.head_dx, &f.head_dx}},   {"head dwte", {&h.head_dw, &f.head_dw}}};
  for (const auto& [name, p] : pairs) {
    const double e = rel_max_error(*p.first, *p.second);
    EXPECT_LT(e, 0.01) << name;
    EXPECT_GT(e, 0.0) << name << ": bf16 GEMMs gave fp32's bits";
  }
  EXPECT_NEAR(h.loss, f.loss, 0.01 * f.loss);
}

}  // namespace
}  // namespace tierzero
