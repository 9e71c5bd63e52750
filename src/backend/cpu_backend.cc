// cpu_backend(): host memory, the CPU's element work, its optimizer step
// (optim.h's AdamW, run at once) and the CPU model.
#include "backend/backend_impl.h"
#include "model/host_ops.h"

namespace tierzero {

namespace {
class HostStepOps final : public StepOps {
 public:
  void scale(float* buf, std::size_t n, float factor) override {
    for (std::size_t i = 0; i < n; ++i) buf[i] *= factor;
  }
  double sum_squares(const float* buf, std::size_t n) override {
    double sq = 0;
    for (std::size_t i = 0; i < n; ++i) sq += static_cast<double>(buf[i]) * buf[i];
    return sq;
  }
  void adamw(float* p, const float* g, float* m, float* v, std::size_t n, const AdamWConfig& c, std::int64_t t, float lr,
             bool decay) override {
    adamw_update(p, g, m, v, n, c, t, lr, decay);
  }
};
}  // namespace

std::string cpu_gemm_warning(MatmulType used) { return ops::gemm_warning(used); }

const Backend& cpu_backend() {
  static HostStepOps step;
  static const Backend backend = backend_of<HostOps>("cpu", host_memory(), host_element_ops(), step);
  return backend;
}

}  // namespace tierzero
