// Single-thread quantise/dequantise throughput against memcpy of the same
// bytes, measured side by side in one run (bench quant).
#pragma once
#include <string>
#include <vector>

#include "tierzero/quant.h"

namespace tierzero::bench {

struct QuantBenchRow {
  DType dtype = DType::f32;
  QuantSpec spec;
  QuantImpl impl = QuantImpl::best;
  std::size_t elements = 0;
  // GB/s of the unquantised tensor (elements * dtype size / time).
  double quantize_gbs = 0, dequantize_gbs = 0, memcpy_gbs = 0;
};

std::vector<QuantBenchRow> run_quant_bench(std::size_t elements, QuantImpl impl, int reps);
std::string to_json_line(const QuantBenchRow& row);

}  // namespace tierzero::bench
