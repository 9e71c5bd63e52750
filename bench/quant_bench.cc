#include "quant_bench.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "best_seconds.h"
#include "quant/quant.h"
#include "tierzero/error.h"

namespace tierzero::bench {

std::vector<QuantBenchRow> run_quant_bench(std::size_t n, const std::string& impl_name, int reps) {
  QuantImpl impl = QuantImpl::best;
  bool known = false;
  for (QuantImpl i : {QuantImpl::reference, QuantImpl::avx2, QuantImpl::avx512, QuantImpl::avx512bf16, QuantImpl::best})
    if (impl_name == quant_impl_name(i)) impl = i, known = true;
  TZ_CHECK(known, ConfigError, "unknown --impl '" + impl_name + "' (expected best, reference, avx2, avx512 or avx512bf16)");
  const std::string ran(quant_impl_name(impl == QuantImpl::best ? quant_best_impl() : impl));
  std::vector<QuantBenchRow> rows;
  std::vector<float> f32(n);
  std::mt19937 g(3);
  std::normal_distribution<float> d;
  for (float& v : f32) v = d(g);
  std::vector<std::byte> src(n * 4), dst(n * 4), packed(quant_packed_bytes(n, {8, true, 1}));
  std::memset(dst.data(), 0, dst.size());
  std::memset(packed.data(), 0, packed.size());
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    const std::size_t bytes = n * dtype_size(t);
    from_f32(t, f32.data(), src.data(), n);
    for (int bits : {8, 4}) {
      for (bool asym : {false, true}) {
        for (std::size_t block : {64, 256, 1024}) {
          const QuantSpec s{bits, asym, block};
          QuantBenchRow row{std::string(dtype_name(t)), bits, asym, block, ran, n};
          // memcpy timed with each row, next to it: on shared machines the
          // copy rate drifts by a quarter within a minute.
          const double copy = best_seconds(reps, [&] { std::memcpy(dst.data(), src.data(), bytes); });
          const double q = best_seconds(reps, [&] { quantize(src.data(), t, n, s, packed.data(), impl); });
          const double dq = best_seconds(reps, [&] { dequantize(packed.data(), n, s, dst.data(), t, impl); });
          row.quantize_gbs = static_cast<double>(bytes) / q / 1e9;
          row.dequantize_gbs = static_cast<double>(bytes) / dq / 1e9;
          row.memcpy_gbs = static_cast<double>(bytes) / copy / 1e9;
          rows.push_back(row);
        }
      }
    }
  }
  return rows;
}

std::string to_json_line(const QuantBenchRow& r) {
  nlohmann::ordered_json j;
  j["dtype"] = r.dtype;
  j["bits"] = r.bits;
  j["mode"] = r.asymmetric ? "asym" : "sym";
  j["block"] = r.block;
  j["impl"] = r.impl;
  j["elements"] = r.elements;
  j["quantize_gbs"] = r.quantize_gbs;
  j["dequantize_gbs"] = r.dequantize_gbs;
  j["memcpy_gbs"] = r.memcpy_gbs;
  j["quantize_vs_memcpy"] = r.quantize_gbs / r.memcpy_gbs;
  j["dequantize_vs_memcpy"] = r.dequantize_gbs / r.memcpy_gbs;
  return j.dump();
}

}  // namespace tierzero::bench
