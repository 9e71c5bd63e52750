#!/usr/bin/env bash
# Compiles tierzero's GPU sources for AMD's gfx90a (MI250X, Frontier's GCD)
# with Debian's hipcc (ROCm 5.2): the kernels, the device runtime and the
# engine's device memory, as HIP, object files only (no link, no run).
# Debian has no hipBLAS, hipCUB or RCCL: declaration-only hipblas.h and
# hipcub.hpp written here stand in for theirs (the types, enums and the
# calls the sources make), so the check covers every line of device code
# but not the link against the real libraries; a ROCm machine needs ROCm's
# hipBLAS, hipCUB and RCCL for the full build (docs/gpu.md). Installs hipcc
# if missing.
#   scripts/hip_check.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ! command -v hipcc >/dev/null; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends hipcc
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include/hipblas"
cat > "$tmp/include/hipblas/hipblas.h" <<'H'
// Declarations only: the hipBLAS API that src/gpu uses (HIPBLAS_V2), for a compile check.
#pragma once
#include <cstdint>
#include <hip/hip_runtime.h>
#include <hip/library_types.h>
typedef void* hipblasHandle_t;
typedef enum { HIPBLAS_STATUS_SUCCESS = 0 } hipblasStatus_t;
typedef enum { HIPBLAS_OP_N = 111, HIPBLAS_OP_T = 112 } hipblasOperation_t;
typedef enum { HIPBLAS_COMPUTE_32F = 2, HIPBLAS_COMPUTE_32F_FAST_16BF = 8 } hipblasComputeType_t;
typedef enum { HIPBLAS_GEMM_DEFAULT = 160 } hipblasGemmAlgo_t;
hipblasStatus_t hipblasCreate(hipblasHandle_t*);
hipblasStatus_t hipblasDestroy(hipblasHandle_t);
hipblasStatus_t hipblasSetStream(hipblasHandle_t, hipStream_t);
hipblasStatus_t hipblasGemmEx(hipblasHandle_t, hipblasOperation_t, hipblasOperation_t, int, int, int, const void*, const void*,
                              hipDataType, int, const void*, hipDataType, int, const void*, void*, hipDataType, int,
                              hipblasComputeType_t, hipblasGemmAlgo_t);
hipblasStatus_t hipblasGemmStridedBatchedEx(hipblasHandle_t, hipblasOperation_t, hipblasOperation_t, int, int, int, const void*,
                                            const void*, hipDataType, int, long long, const void*, hipDataType, int, long long,
                                            const void*, void*, hipDataType, int, long long, int, hipblasComputeType_t,
                                            hipblasGemmAlgo_t);
H
# hipCUB (ROCm's port of CUB, which the embedding's backward sorts with): its one call, declared.
mkdir -p "$tmp/include/hipcub"
cat > "$tmp/include/hipcub/hipcub.hpp" <<'H'
// Declaration only: the hipCUB API that src/gpu uses, for a compile check.
#pragma once
#include <cstddef>
#include <hip/hip_runtime.h>
namespace hipcub {
struct DeviceRadixSort {
  template <typename KeyT, typename ValueT, typename NumItemsT>
  static hipError_t SortPairs(void* d_temp_storage, size_t& temp_storage_bytes, const KeyT* d_keys_in, KeyT* d_keys_out,
                              const ValueT* d_values_in, ValueT* d_values_out, NumItemsT num_items, int begin_bit = 0,
                              int end_bit = sizeof(KeyT) * 8, hipStream_t stream = 0, bool debug_synchronous = false);
};
}  // namespace hipcub
H
fail=0
for f in src/gpu/gpu_context.cu src/gpu/gpu_quant.cu src/gpu/gpu_ops.cu src/gpu/device_memory.cu; do
  flags=(-x hip --offload-arch=gfx90a -std=c++17 -O2 -DTZ_USE_HIP -DHIPBLAS_V2 -I"$tmp/include" -I"$root/include" -I"$root/src")
  # As CMake builds them: the kernels that must give the CPU's bits without contraction.
  case $f in */gpu_quant.cu | */device_memory.cu) flags+=(-ffp-contract=off) ;; esac
  if hipcc "${flags[@]}" -c "$root/$f" -o "$tmp/$(basename "$f").o" 2> "$tmp/log"; then
    echo "ok: $f for gfx90a"
  else
    echo "FAIL: $f"; grep -E "error" "$tmp/log" | head -n 20; fail=1
  fi
done
exit $fail
