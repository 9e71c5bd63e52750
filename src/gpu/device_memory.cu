// gpu::device_memory(): the Memory of the sharding engine on a CUDA device,
// and gpu::adamw. Element-wise kernels over the float types, converting
// with the same host/device functions as the CPU (tierzero/dtype.h,
// quant/quant_block.h) and built without multiply-add contraction
// (src/CMakeLists.txt), so every result has the CPU's bits.
#include <array>
#include <cmath>
#include <string>

#include "gpu/launch.h"
#include "quant/quant_block.h"
#include "gpu/device_memory.h"

namespace tierzero::gpu {

namespace {
template <class In>
__global__ void to_f32_kernel(const In* src, float* dst, std::size_t n) {
  TZ_GRID_STRIDE(i, n) dst[i] = quant::load(src, i);
}
template <class Out>
__global__ void from_f32_kernel(const float* src, Out* dst, std::size_t n) {
  TZ_GRID_STRIDE(i, n) quant::store(dst, i, src[i]);
}
template <class In>
__global__ void add_to_f32_kernel(const In* src, float* acc, std::size_t n) {
  TZ_GRID_STRIDE(i, n) acc[i] += quant::load(src, i);
}
template <class T>
__global__ void divide_kernel(T* buf, std::size_t n, float d) {
  TZ_GRID_STRIDE(i, n) quant::store(buf, i, quant::load(buf, i) / d);
}
__global__ void scale_kernel(float* buf, std::size_t n, float factor) {
  TZ_GRID_STRIDE(i, n) buf[i] *= factor;
}
__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, std::size_t n, float b1, float b2, float eps,
                             float keep, float step, float bc2_sqrt) {
  TZ_GRID_STRIDE(i, n) {
    m[i] = b1 * m[i] + (1.0f - b1) * g[i];
    v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
    p[i] = p[i] * keep - step * m[i] / (sqrtf(v[i]) / bc2_sqrt + eps);
  }
}
// Sum of squares in a fixed order: each block's grid-stride partial, then
// one block sums the partials (no atomics: the same bits every run).
__global__ void sum_squares_kernel(const float* buf, std::size_t n, double* partials) {
  __shared__ double partial[kThreads];  // blockDim.x == kThreads
  double s = 0;
  TZ_GRID_STRIDE(i, n) s += static_cast<double>(buf[i]) * buf[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = partial[0];
}
__global__ void sum_partials_kernel(double* partials, unsigned count) {
  __shared__ double partial[kThreads];  // one block of kThreads
  double s = 0;
  for (unsigned i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[0] = partial[0];
}

// Calls f with a null pointer of the element type of float type t.
template <class F>
void by_type(DType t, F f) {
  TZ_CHECK(is_float(t), ConfigError, "no element kernel for " + std::string(dtype_name(t)) + " elements");
  if (t == DType::f32) f(static_cast<float*>(nullptr));
  else if (t == DType::bf16) f(static_cast<BF16*>(nullptr));
  else f(static_cast<F16*>(nullptr));
}

// Each thread's marks: a ring of events on its device (a mark reused after
// kMarks later ones is re-recorded later on the same stream: waiting for it
// only waits longer).
constexpr std::size_t kMarks = 64;
struct Marks {
  std::array<cudaEvent_t, kMarks> events{};
  std::uint64_t next = 0;
  Marks() {
    for (auto& e : events) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  }
  ~Marks() {
    for (auto& e : events) cudaEventDestroy(e);
  }
};

// One object on the device: its memory, the element work and the optimizer
// step (core/memory.h, element_ops.h, backend.h), all enqueued on the
// calling thread's stream.
class DeviceMemory final : public Memory, public ElementOps, public StepOps {
 public:
  // The device's one stream-ordered pool (gpu/gpu_ops.h).
  void* allocate(std::size_t bytes) override { return device_allocate(bytes); }
  void release(void* p) noexcept override { device_release(p); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (dst != src && bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()), "device copy");
  }
  void upload(void* dst, const void* host_src, std::size_t bytes) override {
    to_device(dst, host_src, bytes);
    fence();  // the host source may change as soon as this returns
  }
  void download(void* host_dst, const void* src, std::size_t bytes) override { to_host(host_dst, src, bytes); }
  void zero(void* dst, std::size_t bytes) override {
    if (bytes) fill_zero(dst, bytes);
  }
  void to_f32(DType from, const void* src, float* dst, std::size_t n) override {
    if (!n) return;
    by_type(from, [&](auto* tag) {
      to_f32_kernel<<<grid_for(n), kThreads, 0, stream()>>>(static_cast<decltype(tag)>(const_cast<void*>(src)), dst, n);
    });
    launched("to_f32");
  }
  void from_f32(DType to, const float* src, void* dst, std::size_t n) override {
    if (!n) return;
    by_type(to, [&](auto* tag) { from_f32_kernel<<<grid_for(n), kThreads, 0, stream()>>>(src, static_cast<decltype(tag)>(dst), n); });
    launched("from_f32");
  }
  void add_to_f32(DType t, const void* src, float* acc, std::size_t n) override {
    if (!n) return;
    by_type(t, [&](auto* tag) {
      add_to_f32_kernel<<<grid_for(n), kThreads, 0, stream()>>>(static_cast<decltype(tag)>(const_cast<void*>(src)), acc, n);
    });
    launched("add_to_f32");
  }
  void divide(void* buf, std::size_t n, DType t, int divisor) override { gpu::divide(buf, n, t, divisor); }
  void scale(float* buf, std::size_t n, float factor) override {
    if (!n) return;
    scale_kernel<<<grid_for(n), kThreads, 0, stream()>>>(buf, n, factor);
    launched("scale");
  }
  double sum_squares(const float* buf, std::size_t n) override {
    if (!n) return 0;
    const unsigned blocks = grid_for(n);
    auto* total = static_cast<double*>(GpuContext::current().scratch(blocks * sizeof(double)));
    sum_squares_kernel<<<blocks, kThreads, 0, stream()>>>(buf, n, total);
    sum_partials_kernel<<<1, kThreads, 0, stream()>>>(total, blocks);
    launched("sum_squares");
    double s = 0;
    to_host(&s, total, sizeof s);
    return s;
  }
  void quantize(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed) override {
    gpu::quantize(src, t, n, s, packed, nullptr);
  }
  void dequantize(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t) override {
    gpu::dequantize(packed, n, s, dst, t);
  }
  void dequantize_add(const void* packed, std::size_t n, const QuantSpec& s, float* acc) override {
    gpu::dequantize_add(packed, n, s, acc);
  }
  void adamw(float* p, const float* g, float* m, float* v, std::size_t n, const AdamWConfig& c, std::int64_t t, float lr,
             bool decay) override {
    if (!n) return;
    gpu::adamw(p, g, m, v, n, lr, c.beta1, c.beta2, c.eps, decay ? c.weight_decay : 0.0f, static_cast<int>(t));
  }
  void fence() override { GpuContext::current().synchronize(); }
  MemMark mark() override {
    const cudaStream_t s = stream();  // this thread's context (and device) first
    thread_local Marks marks;
    const cudaEvent_t e = marks.events[marks.next++ % kMarks];
    check(cudaEventRecord(e, s), "cudaEventRecord");
    return {e, 0};
  }
  void wait_for(const MemMark& m) override {
    if (m.handle) check(cudaStreamWaitEvent(stream(), static_cast<cudaEvent_t>(m.handle), 0), "cudaStreamWaitEvent");
  }
};
}  // namespace

void divide(void* buf, std::size_t n, DType t, int divisor, void* on) {
  if (!n) return;
  const cudaStream_t s = on ? static_cast<cudaStream_t>(on) : stream();
  by_type(t, [&](auto* tag) {
    divide_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<decltype(tag)>(buf), n, static_cast<float>(divisor));
  });
  launched("divide");
}

void adamw(float* param, const float* grad, float* m, float* v, std::size_t n, float lr, float beta1, float beta2, float eps,
           float weight_decay, int t) {
  // Bias corrections in double on the host, as optim.cc.
  const double bc1 = 1.0 - std::pow(static_cast<double>(beta1), t);
  const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(beta2), t)));
  adamw_kernel<<<grid_for(n), kThreads, 0, stream()>>>(param, grad, m, v, n, beta1, beta2, eps, 1.0f - lr * weight_decay,
                                                          static_cast<float>(lr / bc1), bc2_sqrt);
  launched("adamw");
}

namespace {
DeviceMemory& device() {
  static DeviceMemory memory;
  return memory;
}
}  // namespace

Memory& device_memory() { return device(); }
ElementOps& device_element_ops() { return device(); }
StepOps& device_step_ops() { return device(); }

}  // namespace tierzero::gpu
