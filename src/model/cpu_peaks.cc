#include "model/cpu_peaks.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>

namespace tierzero::ops {

namespace {

constexpr int kIterations = 20000;  // of 10 instructions: ~0.1 ms per round
constexpr int kRounds = 20;

// 10 independent accumulators (zmm2..zmm11) so that throughput, not latency, bounds the loop.
#define TZ_TEN(op, regs)                                                                                         \
  op " %%" regs "0, %%" regs "1, %%" regs "2\n\t" op " %%" regs "0, %%" regs "1, %%" regs "3\n\t" op " %%" regs \
     "0, %%" regs "1, %%" regs "4\n\t" op " %%" regs "0, %%" regs "1, %%" regs "5\n\t" op " %%" regs "0, %%" regs \
     "1, %%" regs "6\n\t" op " %%" regs "0, %%" regs "1, %%" regs "7\n\t" op " %%" regs "0, %%" regs "1, %%" regs \
     "8\n\t" op " %%" regs "0, %%" regs "1, %%" regs "9\n\t" op " %%" regs "0, %%" regs "1, %%" regs "10\n\t" op  \
     " %%" regs "0, %%" regs "1, %%" regs "11\n\t"

void fma_zmm() {
  for (int i = 0; i < kIterations; ++i)
    __asm__ volatile(TZ_TEN("vfmadd231ps", "zmm")::: "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11");
}
void fma_ymm() {
  for (int i = 0; i < kIterations; ++i)
    __asm__ volatile(TZ_TEN("vfmadd231ps", "ymm")::: "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11");
}
void dpbf16_zmm() {
  for (int i = 0; i < kIterations; ++i)
    __asm__ volatile(TZ_TEN("vdpbf16ps", "zmm")::: "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11");
}
#undef TZ_TEN

double seconds(void (*loop)()) {
  const auto t0 = std::chrono::steady_clock::now();
  loop();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool isa_has(dnnl_cpu_isa_t want) {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  return (isa & static_cast<unsigned>(want)) == static_cast<unsigned>(want);
}

CpuPeaks measure() {
  CpuPeaks p;
  __builtin_cpu_init();
  const bool zmm = __builtin_cpu_supports("avx512f"), ymm = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool bf16 = __builtin_cpu_supports("avx512bf16");
  void (*fma)() = zmm ? fma_zmm : ymm ? fma_ymm : nullptr;
  if (!fma) return p;
  double best_fma = 1e30, best_dot = 1e30;
  for (int r = 0; r < kRounds; ++r) {  // interleaved: a slow moment hurts both alike, the best of each survives
    best_fma = std::min(best_fma, seconds(fma));
    if (bf16) best_dot = std::min(best_dot, seconds(dpbf16_zmm));
  }
  const double instructions = 10.0 * kIterations;
  p.fp32_gflops = instructions * (zmm ? 32 : 16) / best_fma / 1e9;         // 16 or 8 lanes x 2 flops
  if (bf16) p.bf16_dot_gflops = instructions * 64 / best_dot / 1e9;        // 16 lanes x 2 pairs x 2 flops
  p.amx = isa_has(dnnl_cpu_isa_avx512_core_amx);
  return p;
}

}  // namespace

const CpuPeaks& cpu_peaks() {
  static const CpuPeaks peaks = measure();
  return peaks;
}

}  // namespace tierzero::ops
