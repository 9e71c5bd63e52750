// NCCL on NVIDIA GPUs, RCCL (same API) on AMD GPUs: one include for both.
// The runtime names are CUDA's, mapped to HIP by gpu/device_api.h when
// TZ_USE_HIP is defined (a ROCm build, -DTZ_WITH_HIP=ON; not built here).
#pragma once
#include "gpu/device_api.h"
#if defined(TZ_USE_HIP)
#include <rccl/rccl.h>
#else
#include <nccl.h>
#endif
