#include "tierzero/sensitivity.h"

#include <algorithm>

namespace tierzero {

SimInput with_efficiency(const SimInput& in, double network, double gemm) {
  SimInput out = in;
  for (LinkSpec& l : out.system.links) {
    l.bandwidth_Bps *= network;
    for (RatePoint& p : l.achieved) p.bandwidth_Bps *= network;
  }
  DeviceSpec& d = out.system.device;
  d.gemm_efficiency = std::min(1.0, d.gemm_efficiency * gemm);
  d.gemm_fp8_efficiency = std::min(1.0, d.gemm_fp8_efficiency * gemm);
  return out;
}

SimRange simulate_range(const SimInput& in) {
  constexpr double kHigh = 1 + kSensitivity, kLow = 1 - kSensitivity;
  return {simulate(with_efficiency(in, kHigh, kHigh)), simulate(with_efficiency(in, kLow, kLow))};
}

}  // namespace tierzero
