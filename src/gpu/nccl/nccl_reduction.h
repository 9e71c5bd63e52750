// How a ReduceOp runs on NCCL (RCCL). avg is a sum followed by one
// division by the member count on the communicator's stream, as the CPU
// and the hierarchical collectives compute it: NCCL's own ncclAvg
// pre-multiplies every input by 1/n rounded to the element type (for bf16
// and n = 3, 0.333984375: 0.2% high), so gradients and norms would differ
// from the CPU's on 3, 6, 12 GPUs.
#pragma once
#include "gpu/nccl/nccl_api.h"
#include "tierzero/communicator.h"
#include "tierzero/error.h"

namespace tierzero {

struct NcclReduction {
  ncclRedOp_t op = ncclSum;
  bool divide_after = false;  // divide the result by the member count
};

inline NcclReduction nccl_reduction(ReduceOp op, DType t) {
  TZ_CHECK(op != ReduceOp::avg || is_float(t), CommError, "avg reduction needs a float type");
  return {ncclSum, op == ReduceOp::avg};
}

}  // namespace tierzero
