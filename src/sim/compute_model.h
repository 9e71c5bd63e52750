// Prices the operations of a step on one device (docs/simulator.md,
// "Compute"), the op list of op_list.h under a System's DeviceSpec and an
// engine's kernels:
//   GEMM       max(2 m n k / (peak x e), bytes / (bandwidth x memory_efficiency)),
//              e = the device's gemm_efficiency x the shape's tile and wave
//              quantisation (the best of cuBLAS's tile shapes)
//   attention  its FLOPs at the implementation's rate for the sequence and head size
//   memory     bytes x elementwise_traffic / (bandwidth x memory_efficiency);
//              an op the model's code writes (Op::coded) at its own bytes
// and every kernel takes at least the device's launch floor and the
// engine's host overhead. Pure functions.
#pragma once
#include <vector>

#include "sim/op_list.h"
#include "tierzero/engine.h"
#include "tierzero/system.h"

namespace tierzero {

// Seconds by pass and by kind.
struct ComputeTime {
  double forward_s = 0, backward_s = 0, recompute_s = 0;
  double gemm_s = 0, attention_s = 0, memory_s = 0;
  double total() const { return forward_s + backward_s + recompute_s; }
  ComputeTime& operator+=(const ComputeTime& o);
  ComputeTime scaled(double f) const;
};

// The fraction of the device's rate a GEMM of an m x n output keeps after
// tile and wave quantisation: the output is cut into tiles, one per thread
// block, which run in waves of (SMs x blocks per SM); the last wave and the
// tiles' padding idle the rest (NVIDIA, "Matrix Multiplication Background
// User's Guide", DU-09799-001, sections 3.1 and 3.2). The best tile of
// cuBLAS's shapes. 1 where the device gives no SM count (a CPU).
double gemm_shape_efficiency(double m, double n, int sm_count);

// One operation's seconds (all `count` of it).
double op_time(const Op& op, const System& sys, const EngineProfile& engine);

ComputeTime price_ops(const std::vector<Op>& ops, const System& sys, const EngineProfile& engine);

}  // namespace tierzero
