// tierzero_gpu_bench: the GPU measurements of scripts/gpu_check.sh, each
// beside its ceiling in the same run, as JSON lines and then a table:
//   gemm   tierzero's GEMM path (fp32 arrays, bf16 tensor cores, fp32
//          accumulation) at gpt2-124m's shapes vs cuBLAS on a large square
//          pure-bf16 product (the practical peak)
//   quant  blockwise int8/int4 quantise and dequantise GB/s (bytes read +
//          written) vs a device-to-device copy of the same input
//   layernorm backward at gpt2-124m's shape (dx and the column sums) vs
//          the same copy rate
//   train  single-GPU training steps (forward, backward, AdamW) of
//          gpt2-124m (B 8, T 1024) and of a Llama shape, llama3.2-1b (B 2,
//          T 2048): tokens/s and model FLOPs utilisation against the
//          datasheet peak (--peak-tflops; 989 for H100/H200 SXM, 312 for A100)
// Every input is random (all-zero GEMMs run faster than real ones). Each
// row is printed as a JSON line as soon as it is measured (a run cut short
// keeps the rows before), non-finite numbers as null. Needs a CUDA device;
// exits 77 (skip) without one, 1 where TZ_REQUIRE_GPU=1 (the GPU check on a
// machine that lists a GPU).
#include "gpu/device_api.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gpu/gpu_quant.h"
#include "gpu/gpu_model.h"
#include "tierzero/optim.h"

namespace tierzero {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Mean seconds per call of `op` on the current stream, after one warm-up call.
double time_gpu(int iters, const std::function<void()>& op) {
  const auto stream = static_cast<cudaStream_t>(gpu::GpuContext::current().stream());
  op();
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  check(cudaEventRecord(a, stream), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) op();
  check(cudaEventRecord(b, stream), "cudaEventRecord");
  check(cudaEventSynchronize(b), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / 1e3 / iters;
}

struct Row {
  std::string check, value_unit;
  double value = 0, ceiling = 0;
  std::string ceiling_name;
};

// One JSON line, flushed at once (a step cut by its time limit keeps the rows
// before it); a value or ratio that is not finite is written as null.
void print_json(const Row& r) {
  const auto number = [](double v) {
    if (!std::isfinite(v)) return std::string("null");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return std::string(buf);
  };
  std::printf("{\"check\": \"%s\", \"value\": %s, \"unit\": \"%s\", \"ceiling\": %s, \"ceiling_of\": \"%s\", \"ratio\": %s}\n",
              r.check.c_str(), number(r.value).c_str(), r.value_unit.c_str(), number(r.ceiling).c_str(), r.ceiling_name.c_str(),
              number(r.ceiling > 0 ? r.value / r.ceiling : NAN).c_str());
  std::fflush(stdout);
}

// Uniform values in [-1, 1) from a counter hash (fast enough for 64M elements): GEMMs on
// all-zero inputs run faster than on real data (the tensor cores switch less), so the
// peaks and the layers are timed on random data.
float hashed(std::size_t i, std::uint32_t seed) {
  std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed * 0x9e3779b9u;
  h ^= h >> 15, h *= 0x2c1b3c6du, h ^= h >> 12, h *= 0x297a2d39u, h ^= h >> 15;
  return static_cast<float>(h >> 8) / 8388608.0f - 1.0f;
}
void random_f32(gpu::DeviceArray<float>& a, std::uint32_t seed) {
  std::vector<float> h(a.size());
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = hashed(i, seed);
  gpu::to_device(a.data(), h.data(), h.size() * 4);
  gpu::GpuContext::current().synchronize();
}
void random_bf16(gpu::DeviceArray<std::uint16_t>& a, std::uint32_t seed) {
  std::vector<std::uint16_t> h(a.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    const float f = hashed(i, seed);
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    h[i] = static_cast<std::uint16_t>(u >> 16);  // truncation: any bf16 in [-1, 1) will do
  }
  gpu::to_device(a.data(), h.data(), h.size() * 2);
  gpu::GpuContext::current().synchronize();
}

double cublas_bf16_peak() {
  const int n = 8192;
  gpu::DeviceArray<std::uint16_t> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size());
  random_bf16(a, 1), random_bf16(b, 2);
  const float one = 1, zero = 0;
  auto handle = static_cast<cublasHandle_t>(gpu::GpuContext::current().blas());
  const double t = time_gpu(10, [&] {
    cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.data(), CUDA_R_16BF, n, b.data(), CUDA_R_16BF, n, &zero,
                 c.data(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  });
  return 2.0 * n * n * n / t / 1e12;
}

Row gemm_row(double peak) {
  // gpt2-124m's MLP up-projection for 8 x 1024 tokens: [8192, 768] x [768, 3072].
  const int N = 8192, IC = 768, OC = 3072;
  gpu::DeviceArray<float> x(static_cast<std::size_t>(N) * IC), w(static_cast<std::size_t>(OC) * IC), out(static_cast<std::size_t>(N) * OC);
  random_f32(x, 3), random_f32(w, 4);
  gpu::GpuContext::current().math = MatmulType::bf16;
  const double t = time_gpu(20, [&] { gpu::matmul_forward(out.data(), x.data(), w.data(), nullptr, N, IC, OC); });
  return {"gemm_gpt2_mlp_bf16", "TFLOP/s", 2.0 * N * IC * OC / t / 1e12, peak, "cuBLAS bf16 8192^3"};
}

// LayerNorm backward at gpt2-124m's shape (8 x 1024 tokens, 768 channels): dx and the
// column sums of dw and db, against the copy rate: it reads dout and x and writes dx.
Row layernorm_backward_row(double copy_gbs) {
  const int N = 8192, C = 768;
  const std::size_t nc = static_cast<std::size_t>(N) * C;
  gpu::DeviceArray<float> x(nc), dout(nc), dx(nc), w(C), dw(C), db(C), mean(N), rstd(N), y(nc);
  random_f32(x, 5), random_f32(dout, 6), random_f32(w, 7), random_f32(dw, 8), random_f32(db, 9);
  gpu::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), db.data(), N, C);
  const double t = time_gpu(20, [&] {
    gpu::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
  });
  return {"layernorm_backward_gpt2", "GB/s", 4.0 * nc * 4 / t / 1e9, copy_gbs, "device-to-device copy"};
}

std::vector<Row> quant_rows() {
  const std::size_t n = std::size_t{64} << 20;  // bf16 elements, 128 MiB
  gpu::DeviceArray<std::uint16_t> src(n), copy(n), back(n);
  std::vector<std::uint16_t> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<std::uint16_t>(0x3f80 + (i * 2654435761u >> 20) % 0x7f);  // bf16 in [1, 2)
  gpu::to_device(src.data(), host.data(), n * 2);
  const auto stream = static_cast<cudaStream_t>(gpu::GpuContext::current().stream());
  const double t_copy = time_gpu(10, [&] { cudaMemcpyAsync(copy.data(), src.data(), n * 2, cudaMemcpyDeviceToDevice, stream); });
  const double copy_gbs = 2.0 * n * 2 / t_copy / 1e9;  // read + write
  std::vector<Row> rows;
  for (int bits : {8, 4}) {
    const QuantSpec s{bits, false, 256};
    const std::size_t packed_bytes = quant_packed_bytes(n, s);
    gpu::DeviceArray<std::byte> packed(packed_bytes);
    gpu::DeviceArray<unsigned> bad(1);
    const double tq = time_gpu(10, [&] { gpu::quantize(src.data(), DType::bf16, n, s, packed.data(), bad.data()); });
    const double td = time_gpu(10, [&] { gpu::dequantize(packed.data(), n, s, back.data(), DType::bf16); });
    const double moved = static_cast<double>(n * 2 + packed_bytes);
    rows.push_back({"quantize_int" + std::to_string(bits), "GB/s", moved / tq / 1e9, copy_gbs, "device-to-device copy"});
    rows.push_back({"dequantize_int" + std::to_string(bits), "GB/s", moved / td / 1e9, copy_gbs, "device-to-device copy"});
  }
  rows.push_back(layernorm_backward_row(copy_gbs));
  return rows;
}

// One training step (forward, backward, AdamW) of `preset` on one GPU at
// micro-batch B and sequence T, on fixed pseudo-random tokens: tokens/s and
// model FLOP/s against the datasheet peak (`name`_tokens_per_s, `name`_mfu).
std::vector<Row> train_rows(const std::string& name, const char* preset, int B, int T, double datasheet_peak) {
  const GptLayout layout(gpt_preset(preset));
  const int V = layout.config().vocab;
  const std::size_t n = layout.num_params();
  GptModel<float, gpu::DeviceOps> model(layout, B, T);
  std::vector<float> host(n);
  gpt_init(layout, 1, host.data());
  gpu::DeviceArray<float> p(n), g(n), m(n), v(n);
  gpu::to_device(p.data(), host.data(), n * 4);
  std::vector<float>().swap(host);  // 5 GB for llama3.2-1b: not kept through the timing
  gpu::fill_zero(m.data(), n * 4), gpu::fill_zero(v.data(), n * 4);
  std::vector<int> tokens(static_cast<std::size_t>(B) * T), targets(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int>(i * 7919 % V), targets[i] = static_cast<int>((i * 104729 + 1) % V);
  gpu::DeviceArray<int> tok(tokens.size()), tgt(tokens.size());
  gpu::to_device(tok.data(), tokens.data(), tokens.size() * 4);
  gpu::to_device(tgt.data(), targets.data(), targets.size() * 4);
  const AdamWConfig c;
  int t = 0;
  const double step = time_gpu(5, [&] {
    gpu::fill_zero(g.data(), n * 4);
    model.forward_backward(p.data(), g.data(), tok.data(), tgt.data());
    gpu::adamw(p.data(), g.data(), m.data(), v.data(), n, 6e-4f, c.beta1, c.beta2, c.eps, c.weight_decay, ++t);
  });
  const double tokens_per_s = static_cast<double>(B) * T / step;
  const double per_token = layout.config().flops_per_token(T);
  return {{name + "_train_tokens_per_s", "tokens/s", tokens_per_s, datasheet_peak * 1e12 / per_token, "tokens/s at the datasheet peak"},
          {name + "_train_mfu", "TFLOP/s", per_token * tokens_per_s / 1e12, datasheet_peak, "datasheet bf16 peak"}};
}

}  // namespace
}  // namespace tierzero

int main(int argc, char** argv) {
  using namespace tierzero;
  std::string why;
  if (!gpu_available(&why)) {
    const char* required = std::getenv("TZ_REQUIRE_GPU");
    std::fprintf(stderr, "tierzero_gpu_bench: no GPU (%s)\n", why.c_str());
    return required && std::string(required) == "1" ? 1 : 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  double datasheet = 989;  // H100/H200 SXM dense bf16
  if (std::strstr(prop.name, "A100")) datasheet = 312;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--peak-tflops") datasheet = std::stod(argv[i + 1]);
  std::fprintf(stderr, "device: %s, datasheet bf16 peak %.0f TFLOP/s\n", prop.name, datasheet);
  std::vector<Row> rows;
  const auto add = [&rows](const Row& r) { print_json(r), rows.push_back(r); };
  const double peak = cublas_bf16_peak();
  add({"cublas_bf16_peak", "TFLOP/s", peak, datasheet, "datasheet bf16 peak"});
  add(gemm_row(peak));
  for (auto& r : quant_rows()) add(r);
  // The two shapes bench/gpt_vs_pytorch_gpu.py times in PyTorch.
  for (auto& r : train_rows("gpt2_124m", "gpt2-124m", 8, 1024, datasheet)) add(r);
  for (auto& r : train_rows("llama_1b", "llama3.2-1b", 2, 2048, datasheet)) add(r);
  std::printf("\n| check | value | ceiling | ratio |\n|---|---|---|---|\n");
  for (const Row& r : rows)
    std::printf("| %s | %.1f %s | %.1f (%s) | %.2f |\n", r.check.c_str(), r.value, r.value_unit.c_str(), r.ceiling,
                r.ceiling_name.c_str(), r.value / r.ceiling);
  return 0;
}
