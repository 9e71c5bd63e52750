// The CPU's peak arithmetic rates on one thread, measured, not assumed:
// whether bf16 GEMMs beat fp32 ones depends on the microarchitecture, not
// only on the instruction set. Measured on a VM here: an Intel Xeon
// (family 6, model 207) with AVX512-BF16 but AMX hidden by the hypervisor
// issues vdpbf16ps zmm (32 multiply-adds) at a quarter of the rate of
// vfmadd231ps zmm (16 multiply-adds): 85 against 172 GFLOP/s, and oneDNN's bf16 GEMMs ran
// there at 79 GFLOP/s against 154 for fp32. AMX's tile multiply does far
// more work per instruction than either, so a CPU with AMX is taken to
// multiply bf16 faster without measuring it.
// Threading: measured once per process, on first use, from any thread.
#pragma once

namespace tierzero::ops {

struct CpuPeaks {
  double fp32_gflops = 0;      // vfmadd231ps (zmm with AVX-512, ymm with AVX2+FMA, else 0), one thread
  double bf16_dot_gflops = 0;  // vdpbf16ps zmm (AVX512-BF16, else 0), one thread
  bool amx = false;            // AMX's bf16 tiles usable (oneDNN's effective ISA: CPUID, XCR0, the kernel's permission)
  // bf16 dot products over fp32 FMAs (0 without AVX512-BF16).
  double bf16_vs_fp32() const { return fp32_gflops > 0 ? bf16_dot_gflops / fp32_gflops : 0.0; }
  // Whether bf16 GEMMs are the faster math here: AMX, or bf16 dot products
  // at 1.25x the FMA rate or more (the ratios seen are 0.5 and 2, far from
  // the threshold, so timing noise cannot flip the choice).
  bool bf16_faster() const { return amx || bf16_vs_fp32() >= 1.25; }
};

// Measured on first call (~2 ms: the best of 20 interleaved rounds of each
// instruction, 10 independent accumulators).
const CpuPeaks& cpu_peaks();

}  // namespace tierzero::ops
