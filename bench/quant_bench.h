// Single-thread quantise/dequantise throughput against memcpy of the same
// bytes, measured side by side in one run (bench quant).
#pragma once
#include <string>
#include <vector>


namespace tierzero::bench {

struct QuantBenchRow {
  std::string dtype;  // fp32, bf16, fp16
  int bits = 8;
  bool asymmetric = false;
  std::size_t block = 0;
  std::string impl;  // the kernels that ran: reference, avx2, avx512
  std::size_t elements = 0;
  // GB/s of the unquantised tensor (elements * dtype size / time).
  double quantize_gbs = 0, dequantize_gbs = 0, memcpy_gbs = 0;
};

// `impl`: best, reference, avx2 or avx512 (ConfigError otherwise).
std::vector<QuantBenchRow> run_quant_bench(std::size_t elements, const std::string& impl, int reps);
std::string to_json_line(const QuantBenchRow& row);

}  // namespace tierzero::bench
