// The GPT layers on a CUDA device (built with -DTZ_WITH_CUDA=ON): the same
// functions, shapes and add-or-write rules as the CPU's model/ops.h, over
// fp32 arrays in device memory, enqueued on the current GpuContext's stream.
// GEMMs go through cuBLAS (cublasGemmEx) with fp32 accumulation; with
// MatmulType::bf16 they run on the tensor cores with bf16 inputs
// (CUBLAS_COMPUTE_32F_FAST_16BF), with MatmulType::fp32 in full fp32 (what the
// tests compare against the CPU at tight tolerance). No layer allocates:
// temporaries live in the caller's scratch or the context's scratch().
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "quant/quant.h"
#include "tierzero/gpt_config.h"

namespace tierzero::gpu {

// Device memory from the device's one stream-ordered pool (cudaMallocAsync
// on `stream`, the calling thread's when null; freed memory stays in the
// pool for reuse, nothing is returned to the driver). Every device buffer
// of tierzero (engine state, model activations, scratch, communicator
// buffers) comes from here. device_allocate() returns memory usable from
// any stream; device_release() needs it unused by every stream (fence first).
void* device_allocate(std::size_t bytes, void* stream = nullptr);
void device_release(void* p, void* stream = nullptr) noexcept;
// Calls of device_allocate so far, on every thread (the steady-state step makes none).
std::uint64_t device_allocations();

// The device that GpuContext::current() uses on every thread from now on
// (default 0): one rank per GPU picks its own, before any GPU work.
void use_device(int device);
int current_device();
// True when current_device() has bf16 tensor cores (compute capability 8.0
// or later; every HIP device tierzero builds for: gfx90a).
bool device_has_bf16();

// One device, one stream and one cuBLAS handle. current() is the calling
// thread's context, made on first use.
class GpuContext {
 public:
  explicit GpuContext(int device = 0);
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  // The calling thread's context on current_device() (tierzero/gpu_backend.h).
  static GpuContext& current();
  void* stream() const;  // cudaStream_t
  void* blas() const;    // cublasHandle_t, bound to stream()
  void synchronize() const;
  // At least `bytes` of device memory for one call's temporaries on this
  // stream (grown when asked for more, never shrunk; the next call reuses it).
  void* scratch(std::size_t bytes);
  MatmulType math = MatmulType::bf16;  // fp32 or bf16 (never automatic)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A device array of T (uninitialised; resize() drops the contents). Move-only.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t n) { resize(n); }
  ~DeviceArray() { reset(); }
  DeviceArray(DeviceArray&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) reset(), p_ = std::exchange(o.p_, nullptr), n_ = std::exchange(o.n_, 0);
    return *this;
  }
  void resize(std::size_t n) {
    reset();
    if (n) p_ = static_cast<T*>(device_allocate(n * sizeof(T))), n_ = n;
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  void reset() noexcept {
    if (p_) device_release(p_);
    p_ = nullptr, n_ = 0;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

// Host <-> device copies on the current stream; to_host waits for it.
void to_device(void* dst, const void* src, std::size_t bytes);
void to_host(void* dst, const void* src, std::size_t bytes);
void fill_zero(void* dst, std::size_t bytes);

// Row-major C[M,N] = alpha op(A) op(B) + beta C, as ops::gemm; `batch`
// products with element strides sa, sb, sc between them.
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc, int batch = 1, long long sa = 0, long long sb = 0, long long sc = 0);

// The vocabulary rows [v0, v0 + V) of wte, as ops::encoder_forward's.
void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int Tn, int C, int v0, int V);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int Tn, int C, int v0, int V);
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b, int N, int C);
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w, const float* mean,
                        const float* rstd, int N, int C);
void rmsnorm_forward(float* out, float* rstd, const float* x, const float* w, int N, int C, float eps);
void rmsnorm_backward(float* dx, float* dw, const float* dout, const float* x, const float* w, const float* rstd, int N, int C);
void rope_forward(float* qkv, const float* cos, const float* sin, int B, int Tn, int H, int KV, int D);
void rope_backward(float* dqkv, const float* cos, const float* sin, int B, int Tn, int H, int KV, int D);
void matmul_forward(float* out, const float* x, const float* w, const float* b, int N, int IC, int OC);
// matmul's backward, and its two parts (model/ops.h)
void matmul_backward(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w, int N, int IC, int OC);
void matmul_backward_input(float* dx, const float* dout, const float* w, int N, int IC, int OC);
void matmul_backward_weight(float* dw, float* db, const float* dout, const float* x, int N, int IC, int OC);
void attention_forward(float* out, float* att, const float* qkv, int B, int Tn, int C, int H, KvHeads kv);
// scratch: attention_scratch(Tn, H) elements.
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, float* scratch, int B, int Tn, int C,
                        int H, KvHeads kv);
void swiglu_forward(float* out, const float* x, int N, int F);
void swiglu_backward(float* dx, const float* x, const float* dout, int N, int F);
constexpr std::size_t attention_scratch(int Tn, int H) { return static_cast<std::size_t>(H) * Tn * Tn; }
void gelu_forward(float* out, const float* x, std::size_t n);
void gelu_backward(float* dx, const float* x, const float* dout, std::size_t n);
void residual_forward(float* out, const float* a, const float* b, std::size_t n);
// Waits for the stream to return the mean loss.
double head_forward(float* probs, const float* x, const float* wte, const int* targets, int N, int C, int V);
void head_backward(float* dx, float* dwte, float* probs, const float* x, const float* wte, const int* targets, float dloss, int N,
                   int C, int V, int v0);
// The vocabulary-parallel loss's steps (ops.h's); vocab_softmax_loss waits for the stream to return the mean loss.
void vocab_max(float* max, const float* logits, int N, int V);
void vocab_exp_sums(float* logits, float* sums, const float* maxima, int G, const int* targets, int N, int V, int v0);
double vocab_softmax_loss(float* probs, const float* sums, int N, int V);

// One AdamW step over n fp32 elements (optim.h's rule): m, v moments; lr
// already scheduled; bias corrections from step t (1-based).
void adamw(float* param, const float* grad, float* m, float* v, std::size_t n, float lr, float beta1, float beta2, float eps,
           float weight_decay, int t);

// buf[i] /= divisor over n elements of float type t (the CPU's rounding),
// enqueued on `stream` (a cudaStream_t; the current one when null): how
// the NCCL communicator finishes an average, a sum then one division.
void divide(void* buf, std::size_t n, DType t, int divisor, void* stream = nullptr);

// Blockwise quantisation on the current stream, device pointers, the CPU
// reference's packed layout and bits (quant.h; int4 needs an even block):
// quantize adds the number of blocks holding inf/nan to *bad_blocks (when
// not null); dequantize_add adds the decoded values into acc.
void quantize(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed, unsigned* bad_blocks);
void dequantize(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t);
void dequantize_add(const void* packed, std::size_t n, const QuantSpec& s, float* acc);

}  // namespace tierzero::gpu

