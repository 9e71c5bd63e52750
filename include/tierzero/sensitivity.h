// How far a prediction moves with the two inputs a user is least sure of
// (docs/simulator.md, "What is not known"): the bandwidth the collectives
// reach on every level of the system (the link rate and its measured
// points; latencies unchanged) and the efficiency of the GEMMs
// (gemm_efficiency and gemm_fp8_efficiency, at most 1), each at 1 -
// kSensitivity and 1 + kSensitivity times the assumed.
#pragma once
#include "tierzero/simulator.h"

namespace tierzero {

constexpr double kSensitivity = 0.25;

// `in` with every level's bandwidth (LinkSpec::bandwidth_Bps and each
// achieved point) times `network` and the device's GEMM efficiencies times
// `gemm`, capped at 1.
SimInput with_efficiency(const SimInput& in, double network, double gemm);

// The step at both inputs 1 + kSensitivity times the assumed (fastest) and
// at both 1 - kSensitivity times (slowest): the step falls as either rises,
// so these are the range's ends.
struct SimRange {
  SimResult fastest, slowest;
};
SimRange simulate_range(const SimInput& in);

}  // namespace tierzero
