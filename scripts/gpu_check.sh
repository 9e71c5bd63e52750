#!/usr/bin/env bash
# The GPU check: one command on the GPU machine, within 8 minutes, one row
# per step, each written to the output folder as soon as it ends.
#   scripts/gpu_check.sh --bundle DIR --out DIR [--only STEP,...]
#       on a bare GPU machine: runs the bundle scripts/gpu_bundle.sh built
#       (no compiler, apt, network or MPI needed there)
#   scripts/gpu_check.sh --out DIR      where a GPU and the CUDA toolkit are at
#                                       hand: builds the bundle, then runs it
#   scripts/gpu_check.sh --limits       prints each step's time limit and their sum
# --out defaults to $OUT where that is set. Files there (4; the GPU machine
# returns at most 8): summary.jsonl (one JSON line per step, appended as it
# ends), logs.tar.gz (every step's log, repacked after each step),
# gpu_check.md and gpu_check.json (the table so far, rewritten after each
# step), so a run killed at any point returns every step it finished.
# --only reruns some steps (a second call in the same lease); the others
# are left out of the table. TZ_CHECK_LIMIT_S caps every limit (tests).
# Steps, in order (docs/gpu.md), each under its own limit, none stopping the
# next; a correctness step must pass, a speed step only reports:
#   devices    correctness  GPUs, driver, where libcuda and libnvidia-ml are found
#   gpu_tests  correctness  every GPU and NCCL test (TZ_REQUIRE_GPU=1 when
#                           nvidia-smi lists a GPU: a skip is a failure)
#   multi_gpu  correctness  the NCCL and engine tests on every GPU (mpirun;
#                           not applicable with one GPU)
#   train      correctness  gpt2-124m, 30 steps on the built-in corpus,
#                           --check-comm-order, --breakdown, checkpoints at 20 and 30
#   resume     correctness  from the step-20 checkpoint to 30: the same losses, bit for bit
#   export     correctness  the save folder as a Hugging Face GPT-2 directory
#   hf         correctness  transformers loads it (bench/hf_export_check.py)
#   llama      correctness  llama-mini (RMSNorm, RoPE, GQA, SwiGLU), 20 steps, --check-comm-order
#   bench      speed        tierzero_gpu_bench: cuBLAS peak, GEMM, quantisers,
#                           gpt2-124m and llama3.2-1b steps (tokens/s, MFU)
#   pytorch    speed        the same two steps in PyTorch eager (bench/gpt_vs_pytorch_gpu.py)
# Exit status: 0 when every correctness step passed (multi_gpu may be not
# applicable), 1 otherwise, 2 for bad usage.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# name kind limit_s; the limits add up to at most 480 s (8 minutes).
steps_table="devices correctness 15
gpu_tests correctness 120
multi_gpu correctness 40
train correctness 50
resume correctness 30
export correctness 15
hf correctness 40
llama correctness 30
bench speed 60
pytorch speed 60"

usage() { echo "usage: scripts/gpu_check.sh [--bundle DIR] [--out DIR] [--only STEP,...] | --limits" >&2; exit 2; }
bundle= out=${OUT:-} only=
while [ $# -gt 0 ]; do
  case $1 in
    --bundle) bundle=${2:?--bundle needs the bundle\'s folder}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --only) only=${2:?--only needs step names}; shift 2 ;;
    --limits)
      awk '{ print $1, $3; s += $3 } END { print "total", s }' <<< "$steps_table"
      exit 0 ;;
    *) usage ;;
  esac
done
[ -n "$out" ] || { echo "gpu_check: give --out DIR (or set OUT)" >&2; usage; }
command -v python3 >/dev/null || { echo "gpu_check: python3 is needed for the summary" >&2; exit 2; }
for s in ${only//,/ }; do
  grep -q "^$s " <<< "$steps_table" || { echo "gpu_check: unknown step '$s' (steps: $(awk '{ printf "%s ", $1 }' <<< "$steps_table"))" >&2; exit 2; }
done
if [ -z "$bundle" ]; then
  "$root/scripts/gpu_bundle.sh" || exit 2
  bundle=$root/build-gpu/bundle
fi
source "$root/scripts/bundle_env.sh"
mkdir -p "$out" || exit 2
work=$(mktemp -d "${TMPDIR:-/tmp}/tierzero-gpu-check.XXXXXX")
tz_bundle_open "$bundle" "$work/bundle" || exit 2
logs=$work/logs
mkdir -p "$logs"
[ -n "$only" ] || rm -f "$out/summary.jsonl"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "$gpus" -gt 0 ] && export TZ_REQUIRE_GPU=1
export root work logs gpus

# ---- the steps (each runs in its own shell under `timeout`)
step_devices() {
  nvidia-smi -L || echo "nvidia-smi: not found or failed"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null
  echo "cores usable by this process: $(nproc)"
  echo "bundle: $TZ_BUNDLE"
  echo "library path: $TZ_LIBPATH"
  local missing=0 lib
  for lib in libcuda.so.1 libnvidia-ml.so.1; do tz_find_lib "$lib" || missing=1; done
  tz_bundle_libs tierzero
  tz_bundle_libs gpu_tests | grep -E 'not found|cublas|nccl'
  [ "$gpus" -eq 0 ] && { echo "no GPU listed by nvidia-smi"; return 1; }
  return $missing
}
step_gpu_tests() { tz_run gpu_tests --gtest_output="json:$logs/gpu_tests.json"; }
step_multi_gpu() {
  mpirun --bind-to none -np "$gpus" -x TZ_REQUIRE_GPU "$TZ_BUNDLE/lib/ld-linux-x86-64.so.2" --library-path "$TZ_LIBPATH" \
    "$TZ_BUNDLE/bin/gpu_tests" --gtest_filter='Nccl*:GpuEngine*'
}
train_gpt2() {  # the run of the train and resume steps, with the caller's options
  tz_run tierzero train --device cuda --model gpt2-124m --data builtin --steps 30 --micro-batch 8 --seq-len 1024 \
    --check-comm-order --comm-timeout 30 --log-every 1 "$@"
}
step_train() { train_gpt2 --breakdown --metrics "$logs/train.jsonl" --save-dir "$work/ckpt" --save-every 20; }
step_resume() {
  local first
  first=$(find "$work/ckpt" -maxdepth 1 -name 'step-*' -type d 2>/dev/null | sort | head -n 1)
  [ -n "$first" ] || { echo "resume: the train step left no checkpoint in $work/ckpt"; return 1; }
  echo "resuming from $first"
  train_gpt2 --resume "$first" --metrics "$logs/resume.jsonl"
}
step_export() { tz_run tierzero ckpt export "$work/ckpt" --format hf-gpt2 --output "$work/hf"; }
step_hf() { python3 "$root/bench/hf_export_check.py" --export "$work/hf"; }
step_llama() {
  tz_run tierzero train --device cuda --model llama-mini --data builtin --steps 20 --micro-batch 8 --check-comm-order \
    --comm-timeout 30 --log-every 1 --metrics "$logs/llama.jsonl"
}
step_bench() { tz_run tierzero_gpu_bench; }
step_pytorch() { python3 "$root/bench/gpt_vs_pytorch_gpu.py"; }
export -f tz_run tz_bundle_libs tz_find_lib train_gpt2 step_devices step_gpu_tests step_multi_gpu step_train step_resume step_export \
  step_hf step_llama step_bench step_pytorch

# run_step NAME KIND LIMIT: the step under `timeout`, its log in logs/NAME.log,
# then its row (scripts/gpu_check_summary.py) and the output folder updated.
run_step() {
  local name=$1 kind=$2 limit=$3 start rc result
  [ -n "${TZ_CHECK_LIMIT_S:-}" ] && [ "$TZ_CHECK_LIMIT_S" -lt "$limit" ] && limit=$TZ_CHECK_LIMIT_S
  echo "gpu_check: $name (limit $limit s) ..."
  start=$(date +%s)
  if [ "$name" = multi_gpu ] && { [ "$gpus" -lt 2 ] || ! command -v mpirun >/dev/null; }; then
    echo "not applicable: $gpus GPU(s)$(command -v mpirun >/dev/null || echo ', no mpirun')" > "$logs/$name.log"
    rc=77 result=na
  else
    timeout --kill-after=5 "$limit" bash -c "step_$name" > "$logs/$name.log" 2>&1
    rc=$?
    case $rc in 0) result=pass ;; 77) result=skip ;; 124 | 137) result=timeout ;; *) result=fail ;; esac
  fi
  python3 "$root/scripts/gpu_check_summary.py" row --logs "$logs" --out "$out" --name "$name" --kind "$kind" \
    --result "$result" --exit "$rc" --seconds $(($(date +%s) - start)) --limit "$limit" --gpus "$gpus"
  tar -C "$logs" -czf "$out/logs.tar.gz.tmp" . && mv "$out/logs.tar.gz.tmp" "$out/logs.tar.gz"
}

while read -r name kind limit; do
  [ -z "$only" ] || [[ ",$only," == *",$name,"* ]] || continue
  run_step "$name" "$kind" "$limit"
done <<< "$steps_table"
python3 "$root/scripts/gpu_check_summary.py" verdict --out "$out"
