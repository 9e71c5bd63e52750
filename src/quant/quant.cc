// Public quantisation API: sizes, validation, and dispatch to the reference
// or the best vector implementation this CPU supports.
#include "quant/quant.h"

#include <cpuid.h>

#include "quant/quant_block.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {
// F16C from CPUID leaf 1 (clang's __builtin_cpu_supports does not know
// "f16c"). Asked once: under a hypervisor every CPUID instruction is a VM
// exit (tens of microseconds), which per quantise call was most of the
// time of a small one.
bool cpu_has_f16c() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  }();
  return has;
}
bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && cpu_has_f16c();
  return has;
}
bool cpu_has_avx512() {
  static const bool has =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && cpu_has_f16c();
  return has;
}
bool cpu_has_avx512bf16() {
  static const bool has = cpu_has_avx512() && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bf16");
  return has;
}

const quant::Kernels& kernels(QuantImpl impl) {
  if (impl == QuantImpl::best) impl = quant_best_impl();
  TZ_CHECK(quant_impl_available(impl), ConfigError,
           "quantisation implementation '" + std::string(quant_impl_name(impl)) + "' is not available on this CPU");
  switch (impl) {
    case QuantImpl::avx2: return *quant::avx2_kernels();
    case QuantImpl::avx512: return *quant::avx512_kernels();
    case QuantImpl::avx512bf16: return *quant::avx512bf16_kernels();
    default: return quant::reference_kernels();
  }
}
}  // namespace

void validate(const QuantSpec& s) {
  TZ_CHECK(s.bits == 8 || s.bits == 4, ConfigError, "quantisation bits must be 8 or 4, got " + std::to_string(s.bits));
  TZ_CHECK(s.block >= 1, ConfigError, "quantisation block size must be at least 1");
}

bool quant_impl_available(QuantImpl impl) {
  switch (impl) {
    case QuantImpl::reference:
    case QuantImpl::best: return true;
    case QuantImpl::avx2: return cpu_has_avx2();
    case QuantImpl::avx512: return cpu_has_avx512();
    case QuantImpl::avx512bf16: return cpu_has_avx512bf16();
  }
  return false;
}

std::string_view quant_impl_name(QuantImpl impl) {
  switch (impl) {
    case QuantImpl::reference: return "reference";
    case QuantImpl::avx2: return "avx2";
    case QuantImpl::avx512: return "avx512";
    case QuantImpl::avx512bf16: return "avx512bf16";
    case QuantImpl::best: return "best";
  }
  return "?";
}

QuantImpl quant_best_impl() {
  static const QuantImpl best = cpu_has_avx512bf16() ? QuantImpl::avx512bf16
                                : cpu_has_avx512()   ? QuantImpl::avx512
                                : cpu_has_avx2()     ? QuantImpl::avx2
                                                     : QuantImpl::reference;
  return best;
}

std::size_t quantize(const void* src, DType t, std::size_t n, const QuantSpec& s, void* packed, QuantImpl impl) {
  validate(s);
  return kernels(impl).quantize(src, t, n, s, packed);
}

void dequantize(const void* packed, std::size_t n, const QuantSpec& s, void* dst, DType t, QuantImpl impl) {
  validate(s);
  kernels(impl).dequantize(packed, n, s, dst, t);
}

void dequantize_add(const void* packed, std::size_t n, const QuantSpec& s, float* acc, QuantImpl impl) {
  validate(s);
  kernels(impl).dequantize_add(packed, n, s, acc);
}

}  // namespace tierzero
