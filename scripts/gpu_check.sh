#!/usr/bin/env bash
# The GPU checks in one command (issue 9; in progress): builds tierzero with
# CUDA for sm_80/sm_90 in build-gpu/, then, where a CUDA device exists, runs
# every GPU test and prints a table last. Without a device it does the
# CPU-side preparation (configure, build, link) and says what was not run.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tz_install
command -v nvcc >/dev/null || { echo "gpu_check: nvcc not found (install the CUDA toolkit)"; exit 2; }
TZ_BUILD="$TZ_ROOT/build-gpu" tz_build -DTZ_WITH_CUDA=ON -DTZ_WITH_NCCL=ON -DCMAKE_CUDA_ARCHITECTURES="80;90"
cd "$TZ_ROOT/build-gpu"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: built tierzero_gpu and the GPU tests; no GPU here, so nothing ran:"
  ctest -N -L gpu | sed -n 's/^ *Test *#[0-9]*: /  not run: /p'
  exit 0
fi
nvidia-smi -L
ctest -L gpu --output-on-failure
status=$?
echo
echo "| check | result |"
echo "|---|---|"
ctest -L gpu 2>/dev/null | sed -n 's/.*Test *#[0-9]*: \([^ ]*\) \.*\** *\([A-Za-z]*\).*/| \1 | \2 |/p'
exit $status
