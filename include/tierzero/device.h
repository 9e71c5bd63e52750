// What one device (a GPU, a GCD, a CPU rank) computes at: the figures the
// simulator's op-by-op compute model prices every operation of a step with
// (docs/simulator.md, "Compute"). Each figure carries its source (a
// datasheet, a published microbenchmark, a fit with the runs it was fitted
// on); system files hold them under [device] (docs/formats.md). Value type.
#pragma once
#include <string>
#include <vector>

namespace tierzero {

// One attention implementation's achieved rate on this device, causal, for
// head size 128: rate(s) = peak x fraction x s / (s + half_seq), forward
// and backward (FlashAttention's convention: forward 2 s^2 d h FLOPs per
// sequence with the causal half skipped, backward 2.5x forward), times
// small_head for heads under 128.
struct AttentionRate {
  std::string implementation;  // flash2, flash3, cudnn, triton, ck, ...
  double forward = 0, backward = 0;
  double half_seq = 0;
  double small_head = 1;
  std::string source;
  bool operator==(const AttentionRate&) const = default;
};

struct DeviceSpec {
  std::string name;  // the device preset these figures are (data/devices/NAME.toml); "" for a system file's own
  // Streaming multiprocessors (NVIDIA) or compute units (AMD): a GEMM's
  // output tiles run in waves over them (tile and wave quantisation). 0: a
  // CPU rank, whose GEMMs are priced at the efficiency alone.
  int sm_count = 0;
  // Fraction of the 16-bit peak a large GEMM reaches in a training step,
  // before its shape's tile and wave quantisation (the best measured
  // shapes reach more: docs/simulator.md lists both).
  double gemm_efficiency = 0.8;
  // A GEMM's reduction length K costs each output tile a fixed prologue and
  // epilogue besides its K steps: the efficiency is scaled by K / (K +
  // short_k) (0: no such loss).
  double short_k = 0;
  double peak_fp8_flops = 0;        // dense FP8 tensor peak; 0: the device has no FP8 GEMMs
  double gemm_fp8_efficiency = 0;   // as gemm_efficiency, of peak_fp8_flops
  double memory_efficiency = 0.85;  // fraction of the memory bandwidth a streaming kernel reaches
  double launch_s = 0;              // device-side floor of one kernel
  // Memory each rank's process holds that no engine allocates: on a CPU
  // rank the program, its libraries and the MPI library's (measured); 0 on
  // a GPU, whose engines count the CUDA context in their fixed_gb.
  double runtime_bytes = 0;
  std::vector<AttentionRate> attention;
  // Where each figure comes from, keyed by the TOML key it documents.
  std::vector<std::pair<std::string, std::string>> sources;
  bool operator==(const DeviceSpec&) const = default;

  // The rate of `implementation`, or nullptr when the device gives none.
  const AttentionRate* attention_rate(const std::string& implementation) const;
  // The source recorded for `key`, or "".
  std::string source_of(const std::string& key) const;
};

}  // namespace tierzero
