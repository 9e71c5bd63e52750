// Where the sharding engine runs (tierzero/sharded_trainer.h): the memory
// its state lives in, the element-wise and optimizer work on it, and the
// model that computes there. cpu_backend() is host memory and the CPU's
// kernels (the default); gpu::cuda_backend() (tierzero/gpu_backend.h, CUDA
// builds) is device memory and the CUDA kernels. The engine's code is the
// same for both. Opaque here: src/backend/backend_impl.h defines it for the
// engine and for backend implementations.
#pragma once
#include <string>

#include "tierzero/dtype.h"

namespace tierzero {

struct Backend;

// Host memory, the CPU's element and step work and the CPU model. A
// process-wide object; never destroyed.
const Backend& cpu_backend();

// A warning, or nothing, when the CPU's GEMMs in `used` math would run
// slower than the CPU allows (an instruction-set limit in the environment,
// a CPU without AVX2, bf16 asked for where its bf16 units are slower than
// fp32), naming what to do.
std::string cpu_gemm_warning(MatmulType used);

}  // namespace tierzero
