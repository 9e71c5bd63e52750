#include "sim/compute_model.h"

#include <algorithm>
#include <cmath>

#include "tierzero/error.h"

namespace tierzero {

ComputeTime& ComputeTime::operator+=(const ComputeTime& o) {
  forward_s += o.forward_s, backward_s += o.backward_s, recompute_s += o.recompute_s;
  gemm_s += o.gemm_s, attention_s += o.attention_s, memory_s += o.memory_s;
  return *this;
}

ComputeTime ComputeTime::scaled(double f) const {
  ComputeTime t = *this;
  for (double* v : {&t.forward_s, &t.backward_s, &t.recompute_s, &t.gemm_s, &t.attention_s, &t.memory_s}) *v *= f;
  return t;
}

namespace {
// cuBLAS's thread-block tiles for 16-bit GEMMs (the NVIDIA guide, section
// 2.3: 256x128, 128x256, 128x128, 128x64, 64x128, 64x64), with the blocks an
// SM holds at once and each tile's rate relative to the largest (smaller
// tiles reuse less of each operand: an inference, docs/simulator.md).
struct Tile {
  double rows, cols, rate;
  int per_sm;
};
constexpr Tile kTiles[] = {{256, 128, 1.0, 1}, {128, 256, 1.0, 1}, {128, 128, 0.93, 2},
                           {128, 64, 0.85, 2}, {64, 128, 0.85, 2}, {64, 64, 0.7, 4}};

double kernel_floor(const System& sys, const EngineProfile& engine) { return std::max(sys.device.launch_s, engine.host_overhead_s); }

double memory_rate(const System& sys) {
  TZ_CHECK(sys.memory_bandwidth_Bps > 0, ConfigError, "system '" + sys.name + "' gives no memory bandwidth (memory_bandwidth_gbs)");
  return sys.memory_bandwidth_Bps * sys.device.memory_efficiency;
}

double gemm_seconds(const Op& op, const System& sys) {
  const DeviceSpec& d = sys.device;
  const bool fp8 = op.fp8 && d.peak_fp8_flops > 0;
  const double peak = fp8 ? d.peak_fp8_flops : sys.peak_flops;
  const double e = (fp8 ? d.gemm_fp8_efficiency : d.gemm_efficiency) * gemm_shape_efficiency(op.m, op.n, d.sm_count) * op.k /
                   (op.k + d.short_k);
  const double compute = 2 * op.m * op.n * op.k / (peak * e);
  const double operand_bytes = fp8 ? 1 : 2;
  const double traffic = (op.m * op.k + op.k * op.n) * operand_bytes + op.m * op.n * 2;
  return std::max(compute, traffic / memory_rate(sys));
}

double attention_seconds(const Op& op, const System& sys, const EngineProfile& engine) {
  const AttentionRate* r = sys.device.attention_rate(engine.attention);
  TZ_CHECK(r, ConfigError,
           "system '" + sys.name + "' gives no rate for attention '" + engine.attention +
               "' (its [device] lists the implementations it has; or use eager)");
  // FlashAttention's count: 4 s^2 d per sequence and head forward, half of it with the causal mask; backward 2.5x.
  const double forward_flops = 2 * op.rows * op.seq * op.seq * op.head;
  const double flops = op.attention_backward ? 2.5 * forward_flops : forward_flops;
  const double fraction = op.attention_backward ? r->backward : r->forward;
  const double rate = sys.peak_flops * fraction * op.seq / (op.seq + r->half_seq) * (op.head < 128 ? r->small_head : 1.0);
  return flops / rate;
}
}  // namespace

double gemm_shape_efficiency(double m, double n, int sm_count) {
  if (sm_count <= 0) return 1.0;
  double best = 0;
  for (const Tile& t : kTiles) {
    const double tiles = std::ceil(m / t.rows) * std::ceil(n / t.cols);
    const double slots = static_cast<double>(sm_count) * t.per_sm;
    const double waves = std::ceil(tiles / slots);
    best = std::max(best, t.rate * (m * n) / (tiles * t.rows * t.cols) * tiles / (waves * slots));
  }
  return best;
}

double op_time(const Op& op, const System& sys, const EngineProfile& engine) {
  const double floor = kernel_floor(sys, engine);
  switch (op.kind) {
    case OpKind::gemm:
      return op.count * std::max(gemm_seconds(op, sys), floor);
    case OpKind::attention:
      return op.count * std::max(attention_seconds(op, sys, engine), floor);
    case OpKind::memory: {  // each kernel moves its share of the bytes, in at least the floor
      const double traffic = op.coded ? 1.0 : engine.elementwise_traffic;  // a coded op's bytes are its kernels' own
      return op.count * op.kernels * std::max(op.bytes * traffic / op.kernels / memory_rate(sys), floor);
    }
  }
  return 0;
}

ComputeTime price_ops(const std::vector<Op>& ops, const System& sys, const EngineProfile& engine) {
  ComputeTime t;
  for (const Op& op : ops) {
    const double s = op_time(op, sys, engine);
    (op.pass == OpPass::forward ? t.forward_s : op.pass == OpPass::backward ? t.backward_s : t.recompute_s) += s;
    (op.kind == OpKind::gemm ? t.gemm_s : op.kind == OpKind::attention ? t.attention_s : t.memory_s) += s;
  }
  return t;
}

}  // namespace tierzero
