#!/usr/bin/env bash
# The GPU checks in one command: builds tierzero with CUDA and
# NCCL for sm_80/sm_90 in build-gpu/, then, where a CUDA device exists,
#   1. every GPU test (ctest -L gpu): quantisation bit-identical to the CPU
#      reference; each GPT layer against the CPU; gpt-tiny forward/backward
#      in bf16 against the CPU; 20 training steps within 2% of the CPU's
#      losses; no device allocation in the steady-state step; the NCCL
#      communicator's collectives; the device Memory bit for bit against
#      the host's; AdamW on a 40M-element segment bit for bit; ShardedTrainer
#      on the GPU (NCCL) against the CPU (MPI) under zero3/zeropp/hier3/ddp,
#      the collective order checked after every step, no device allocation
#      after the first step, and a GPU checkpoint resumed on the CPU (one
#      rank, then one rank per GPU where there are more);
#   2. tierzero_gpu_bench: bf16 GEMM vs the cuBLAS peak, quantise/dequantise
#      vs a device-to-device copy, gpt2-124m training tokens/s and MFU;
#   3. `tierzero train --device cuda` of gpt2-124m under zero3 on every GPU:
#      the engine's tokens/s beside the bare model's from step 2;
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
  echo "  not run: tierzero train --device cuda (gpt2-124m, zero3, one rank per GPU)"
  exit 0
fi
nvidia-smi -L
tz_mpi_env
ctest -L gpu --output-on-failure --timeout 300 | tee gpu-tests.log
status=${PIPESTATUS[0]}
gpus=$(nvidia-smi -L | wc -l)
if [ "$gpus" -gt 1 ]; then  # the multi-rank NCCL checks, one rank per GPU
  for t in nccl_mpi gpu_engine_mpi; do
    mpirun -np "$gpus" "tests/${t}_test" > "$t-np$gpus.log" 2>&1 && r=Passed || { r=Failed; status=1; }
    echo "    Test #0: ${t}_np$gpus ...... $r" | tee -a gpu-tests.log
  done
fi
./bench/tierzero_gpu_bench | tee gpu-bench.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
mpirun -np "$gpus" ./tierzero train --device cuda --strategy zero3 --model gpt2-124m --micro-batch 8 --seq-len 1024 \
  --steps 12 --log-every 4 --metrics engine.jsonl || status=1
echo
echo "| test | result |"
echo "|---|---|"
sed -n 's/.*Test *#[0-9]*: \([^ ]*\) \.*\** *\([A-Za-z]*\).*/| \1 | \2 |/p' gpu-tests.log
sed -n '/^| check/,$p' gpu-bench.log
# The engine's tokens/s per GPU (mean of steps 4-11) beside the bare model's.
python3 - "$gpus" engine.jsonl gpu-bench.log <<'PY' || status=1
import json, sys
gpus, steps, bench = int(sys.argv[1]), [json.loads(l) for l in open(sys.argv[2])], open(sys.argv[3]).read()
bare = [json.loads(l) for l in bench.splitlines() if l.startswith('{"check": "gpt2_124m_train_tokens_per_s"')][0]["value"]
engine = sum(s["tokens_per_s"] for s in steps[4:]) / len(steps[4:]) / gpus
print(f"| engine_zero3_gpt2_124m_tokens_per_s_per_gpu | {engine:.1f} tokens/s | {bare:.1f} (bare model, one GPU) | {engine / bare:.2f} |")
PY
exit $status
