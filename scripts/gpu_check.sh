#!/usr/bin/env bash
# The GPU checks in one command (issue 9): builds tierzero with CUDA and
# NCCL for sm_80/sm_90 in build-gpu/, then, where a CUDA device exists,
#   1. every GPU test (ctest -L gpu): quantisation bit-identical to the CPU
#      reference; each GPT layer against the CPU; gpt-tiny forward/backward
#      in bf16 against the CPU; 20 training steps within 2% of the CPU's
#      losses; no device allocation in the steady-state step; the NCCL
#      communicator's collectives on one rank (more where more GPUs exist);
#   2. tierzero_gpu_bench: bf16 GEMM vs the cuBLAS peak, quantise/dequantise
#      vs a device-to-device copy, gpt2-124m training tokens/s and MFU;
# and prints the table last. Without a device it does the CPU-side
# preparation (configure, build, link, list) and says what was not run.
# Budget: under 8 minutes on one GPU (the build is most of it).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tz_install
command -v nvcc >/dev/null || { echo "gpu_check: nvcc not found (install the CUDA toolkit)"; exit 2; }
TZ_BUILD="$TZ_ROOT/build-gpu" tz_build -DTZ_WITH_CUDA=ON -DTZ_WITH_NCCL=ON -DCMAKE_CUDA_ARCHITECTURES="80;90"
cd "$TZ_ROOT/build-gpu"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: built tierzero_gpu, the GPU tests and tierzero_gpu_bench; no GPU here, so nothing ran:"
  ctest -N -L gpu | sed -n 's/^ *Test *#[0-9]*: /  not run: /p'
  echo "  not run: bench/tierzero_gpu_bench"
  exit 0
fi
nvidia-smi -L
tz_mpi_env
ctest -L gpu --output-on-failure --timeout 300 | tee gpu-tests.log
status=${PIPESTATUS[0]}
./bench/tierzero_gpu_bench | tee gpu-bench.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo
echo "| test | result |"
echo "|---|---|"
sed -n 's/.*Test *#[0-9]*: \([^ ]*\) \.*\** *\([A-Za-z]*\).*/| \1 | \2 |/p' gpu-tests.log
sed -n '/^| check/,$p' gpu-bench.log
exit $status
