#include "model/gemm.h"

#include <cblas.h>
#include <omp.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#include "model/cpu_peaks.h"
#include "model/vec_kernels.h"
#include "tierzero/error.h"

namespace tierzero::ops {

namespace {
thread_local MatmulType t_matmul = MatmulType::fp32;

// OpenMP (oneDNN's threads) follows OPENBLAS_NUM_THREADS when
// OMP_NUM_THREADS is not set: the scripts of a run with one rank per core
// set only the former. Per thread, as OpenMP's thread count is.
void default_threads() {
  thread_local const bool done = [] {
    const char* omp = std::getenv("OMP_NUM_THREADS");
    const char* blas = std::getenv("OPENBLAS_NUM_THREADS");
    if ((!omp || !*omp) && blas && std::atoi(blas) > 0) omp_set_num_threads(std::atoi(blas));
    return true;
  }();
  (void)done;
}

dnnl_cpu_isa_t effective_isa() { return dnnl_get_effective_cpu_isa(); }

bool isa_has(dnnl_cpu_isa_t isa, dnnl_cpu_isa_t want) {
  return (static_cast<unsigned>(isa) & static_cast<unsigned>(want)) == static_cast<unsigned>(want);
}

std::string isa_name(dnnl_cpu_isa_t isa) {
  if (isa_has(isa, dnnl_cpu_isa_avx512_core_amx)) return "avx512_core_amx";
  if (isa_has(isa, dnnl_cpu_isa_avx512_core_bf16)) return "avx512_core_bf16";
  if (isa_has(isa, dnnl_cpu_isa_avx512_core_vnni)) return "avx512_core_vnni";
  if (isa_has(isa, dnnl_cpu_isa_avx512_core)) return "avx512_core";
  if (isa_has(isa, dnnl_cpu_isa_avx2)) return "avx2";
  if (isa_has(isa, dnnl_cpu_isa_avx)) return "avx";
  if (isa_has(isa, dnnl_cpu_isa_sse41)) return "sse41";
  return "generic";
}

void check(dnnl_status_t st, const char* what) {
  TZ_CHECK(st == dnnl_success, Error, std::string(what) + " failed (oneDNN status " + std::to_string(st) + ")");
}

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// bf16 products of one thread: its stream, conversion buffers and one
// matmul primitive per shape (created on first use).
class Bf16Gemm {
 public:
  void run(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb, float beta,
           float* c, int ldc) {
    // Dense bf16 copies in the operands' own orientation; the primitive reads them through strides.
    convert(a_, a, ta ? k : m, ta ? m : k, lda);
    convert(b_, b, tb ? n : k, tb ? k : n, ldb);
    Primitive& p = primitive(ta, tb, m, n, k, alpha, beta, ldc);
    p.a.set_data_handle(a_.data()), p.b.set_data_handle(b_.data()), p.c.set_data_handle(c);
    p.scratch.set_data_handle(scratch_.get());
    // The C call with an argument array: the C++ execute() builds a map per call.
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, p.a.get()}, {DNNL_ARG_WEIGHTS, p.b.get()}, {DNNL_ARG_DST, p.c.get()},
                                    {DNNL_ARG_SCRATCHPAD, p.scratch.get()}};
    check(dnnl_primitive_execute(p.matmul.get(), stream_.get(), 4, args), "oneDNN matmul");
    stream_.wait();
  }

  // Each cached shape and the implementation oneDNN chose for it.
  std::vector<Bf16GemmKernel> kernels() const {
    std::vector<Bf16GemmKernel> out;
    for (const auto& [key, p] : primitives_) {
      const auto& [ta, tb, m, n, k, alpha, beta, ldc] = key;
      out.push_back({ta, tb, m, n, k, alpha, beta, ldc, p.impl});
    }
    return out;
  }

 private:
  using Key = std::tuple<bool, bool, int, int, int, float, float, int>;
  // A matmul and its argument memories (their data pointers set per call).
  struct Primitive {
    dnnl::matmul matmul;
    dnnl::memory a, b, c, scratch;
    std::string impl;  // oneDNN's name for the kernel, e.g. "brg:avx512_core_amx"
  };
  static void convert(std::vector<std::uint16_t>& out, const float* src, int rows, int cols, int ld) {
    const std::size_t need = static_cast<std::size_t>(rows) * cols;
    if (out.size() < need) out.resize(need);
    to_bf16_rows(out.data(), src, rows, cols, ld);
  }
  // The scratchpad is ours (scratchpad_mode::user), one per thread and grown
  // only: oneDNN's own would be allocated, and page-faulted, on every call.
  Primitive& primitive(bool ta, bool tb, int m, int n, int k, float alpha, float beta, int ldc) {
    const Key key{ta, tb, m, n, k, alpha, beta, ldc};
    auto it = primitives_.find(key);
    if (it != primitives_.end()) return it->second;
    using dims = dnnl::memory::dims;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc ad({m, k}, dt::bf16, ta ? dims{1, m} : dims{k, 1});
    const dnnl::memory::desc bd({k, n}, dt::bf16, tb ? dims{1, k} : dims{n, 1});
    const dnnl::memory::desc cd({m, n}, dt::f32, dims{ldc, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops po;
      po.append_sum(beta);
      attr.set_post_ops(po);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), attr, cpu_engine());
    const std::size_t bytes = pd.scratchpad_desc().get_size();
    if (bytes > scratch_bytes_) {
      scratch_.reset(static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
      scratch_bytes_ = bytes;
    }
    Primitive p{dnnl::matmul(pd), dnnl::memory(ad, cpu_engine(), nullptr), dnnl::memory(bd, cpu_engine(), nullptr),
                dnnl::memory(cd, cpu_engine(), nullptr), dnnl::memory(pd.scratchpad_desc(), cpu_engine(), nullptr),
                pd.impl_info_str()};
    return primitives_.emplace(key, std::move(p)).first->second;
  }
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  dnnl::stream stream_{cpu_engine()};
  std::vector<std::uint16_t> a_, b_;
  std::unique_ptr<std::byte, Free> scratch_;
  std::size_t scratch_bytes_ = 0;
  std::map<Key, Primitive> primitives_;
};

// The calling thread's bf16 products.
Bf16Gemm& thread_bf16_gemm() {
  thread_local Bf16Gemm g;
  return g;
}

}  // namespace

template <>
void gemm<float>(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                 float beta, float* c, int ldc) {
  default_threads();
  if (t_matmul == MatmulType::bf16 && m > 0 && n > 0 && k > 0) {
    thread_bf16_gemm().run(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  check(dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), "dnnl_sgemm");
}

template <>
void gemm<double>(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
                  double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

bool cpu_has_bf16_units() { return isa_has(effective_isa(), dnnl_cpu_isa_avx512_core_bf16); }

std::string Bf16GemmKernel::shape() const {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " + (trans_a ? "T" : "N") + (trans_b ? "T" : "N");
}

std::vector<Bf16GemmKernel> bf16_gemm_kernels() { return thread_bf16_gemm().kernels(); }

Bf16Units cpu_bf16_units() {
  if (!cpu_has_bf16_units()) return Bf16Units::none;
  return cpu_peaks().bf16_faster() ? Bf16Units::faster : Bf16Units::slower;
}

void set_matmul(MatmulType t) {
  TZ_CHECK(t != MatmulType::automatic, Error, "set_matmul needs a resolved matmul type (resolve_matmul)");
  t_matmul = t == MatmulType::bf16 && !cpu_has_bf16_units() ? MatmulType::fp32 : t;
}

MatmulType matmul() { return t_matmul; }

void set_blas_threads(int n) {
  openblas_set_num_threads(n);
  omp_set_num_threads(n);
}

int blas_threads() {
  default_threads();
  return omp_get_max_threads();
}

std::string gemm_info() {
  const dnnl_version_t* v = dnnl_version();
  const std::string isa = isa_name(effective_isa());
  std::string bf16 = "none (fp32)";
  if (cpu_has_bf16_units()) {
    char ratio[96];
    const CpuPeaks& p = cpu_peaks();
    std::snprintf(ratio, sizeof ratio, " (%s)", p.amx ? "AMX" : (std::to_string(p.bf16_vs_fp32()).substr(0, 4) + "x the fp32 FMA rate").c_str());
    bf16 = isa + ratio;
  }
  return "fp32: oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + " " + isa +
         "; bf16: " + bf16 + "; fp64: OpenBLAS " + openblas_get_corename();
}

std::string gemm_warning(MatmulType used) {
  const dnnl_cpu_isa_t isa = effective_isa();
  if (used == MatmulType::bf16 && cpu_bf16_units() == Bf16Units::slower)
    return "bf16 GEMMs: this CPU's bf16 dot products run at " + std::to_string(cpu_peaks().bf16_vs_fp32()).substr(0, 4) +
           "x its fp32 FMA rate (AVX512-BF16 without AMX), so --matmul fp32 (what auto picks here) is faster";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && !isa_has(isa, dnnl_cpu_isa_avx512_core))
    return "GEMMs run on oneDNN's " + isa_name(isa) +
           " kernels on a CPU with AVX-512: unset ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA for up to 2x the rate";
  if (!isa_has(isa, dnnl_cpu_isa_avx2))
    return "GEMMs run on oneDNN's " + isa_name(isa) +
           " kernels: this CPU (or an ONEDNN_MAX_CPU_ISA limit) has no AVX2, so expect several times less than an AVX2 "
           "or AVX-512 CPU";
  return "";
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name = "unknown", family, model;
  auto value = [&] {
    const auto start = line.find_first_not_of(" \t", line.find(':') + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  };
  while (std::getline(in, line) && line.find(':') != std::string::npos) {  // the first processor's block
    const std::string key = line.substr(0, line.find_last_not_of(" \t", line.find(':') - 1) + 1);
    if (key == "model name") name = value();
    else if (key == "cpu family") family = value();
    else if (key == "model") model = value();
  }
  return family.empty() ? name : name + " (family " + family + ", model " + model + ")";
}

}  // namespace tierzero::ops
