// The device runtime of tierzero_gpu: the stream-ordered allocator every
// device buffer comes from, each thread's GpuContext (stream, cuBLAS
// handle, scratch) and host/device copies on that stream.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>

#include "gpu/launch.h"
#include "gpu/gpu_ops.h"

namespace tierzero::gpu {

namespace {
std::atomic<int> g_device{0};
std::atomic<std::uint64_t> g_allocations{0};

void check_blas(cublasStatus_t s, const char* what) {
  TZ_CHECK(s == CUBLAS_STATUS_SUCCESS, Error, std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

// The device's default memory pool keeps what is freed (release threshold:
// everything), so a step that frees and reallocates never goes to the driver.
void keep_pool_memory(int device) {
  static std::mutex mutex;
  static std::set<int> done;
  std::lock_guard<std::mutex> lock(mutex);
  if (!done.insert(device).second) return;
  cudaMemPool_t pool;
  check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  std::uint64_t keep_all = UINT64_MAX;
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all), "cudaMemPoolSetAttribute");
}
}  // namespace

void* device_allocate(std::size_t bytes, void* s) {
  const cudaStream_t on = s ? static_cast<cudaStream_t>(s) : stream();
  void* p = nullptr;
  check(cudaMallocAsync(&p, bytes ? bytes : 1, on), "cudaMallocAsync");
  check(cudaStreamSynchronize(on), "cudaStreamSynchronize");  // usable from any stream once this returns
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void device_release(void* p, void* s) noexcept { cudaFreeAsync(p, s ? static_cast<cudaStream_t>(s) : stream()); }

std::uint64_t device_allocations() { return g_allocations.load(std::memory_order_relaxed); }

struct GpuContext::Impl {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  void* scratch = nullptr;
  std::size_t scratch_bytes = 0;
};

GpuContext::GpuContext(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  check(cudaSetDevice(device), "cudaSetDevice");
  keep_pool_memory(device);
  check(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_blas(cublasCreate(&impl_->blas), "cublasCreate");
  check_blas(cublasSetStream(impl_->blas, impl_->stream), "cublasSetStream");
}

GpuContext::~GpuContext() {
  if (impl_->scratch) cudaFreeAsync(impl_->scratch, impl_->stream);
  cudaStreamSynchronize(impl_->stream);
  cublasDestroy(impl_->blas);
  cudaStreamDestroy(impl_->stream);
}

void use_device(int device) { g_device = device; }
int current_device() { return g_device; }

bool device_has_bf16() {
#if defined(TZ_USE_HIP)
  return true;  // gfx90a (MI250X): bf16 matrix cores
#else
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, g_device), "cudaGetDeviceProperties");
  return prop.major >= 8;
#endif
}

GpuContext& GpuContext::current() {
  thread_local std::unique_ptr<GpuContext> ctx;
  if (!ctx) ctx = std::make_unique<GpuContext>(g_device);
  return *ctx;
}

void* GpuContext::stream() const { return impl_->stream; }
void* GpuContext::blas() const { return impl_->blas; }
void GpuContext::synchronize() const { check(cudaStreamSynchronize(impl_->stream), "cudaStreamSynchronize"); }

void* GpuContext::scratch(std::size_t bytes) {
  if (bytes > impl_->scratch_bytes) {  // stream order: the old buffer is freed after the work queued on it
    if (impl_->scratch) device_release(impl_->scratch, impl_->stream);
    impl_->scratch = device_allocate(bytes, impl_->stream);
    impl_->scratch_bytes = bytes;
  }
  return impl_->scratch;
}

void to_device(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream()), "cudaMemcpyAsync H2D");
}
void to_host(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream()), "cudaMemcpyAsync D2H");
  GpuContext::current().synchronize();
}
void fill_zero(void* dst, std::size_t bytes) { check(cudaMemsetAsync(dst, 0, bytes, stream()), "cudaMemsetAsync"); }

}  // namespace tierzero::gpu
