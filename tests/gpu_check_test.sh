#!/usr/bin/env bash
# scripts/gpu_check.sh --bundle, whole, on the CPU, against stand-ins that
# behave as the real programs do on the GPU machine:
#   the loader    records the library path it is given and resolves dlopen'ed
#                 names (libcuda.so.1) only through it, as ld.so --library-path does
#   nvidia-smi    lists one H200
#   tierzero      the real CPU build (the model shrunk to its tiny twin, the
#                 device dropped), so `ckpt export` refuses what the real CLI
#                 refuses (a file where a checkpoint folder is needed) and a
#                 resume gives the real bits; `--device cuda` fails, as the
#                 real one does, when libcuda is not on the library path
#   gpu_tests     passes with a driver, else skips (exit 0) or, under
#                 TZ_REQUIRE_GPU=1, fails, as TZ_NEED_GPU does
#   the bench     JSON lines, one of them cut, one with `inf` (what the old
#                 bench printed), then (broken case) a hang
#   python3       the real one, but for the two GPU Python scripts: the HF
#                 check refuses a folder without config.json and
#                 model.safetensors, the PyTorch bench prints its figures
# Three runs: a healthy machine (exit 0, every row, every figure, the
# library path in the right order, TZ_REQUIRE_GPU=1 reaching the tests);
# a broken one (no driver library, GPU tests that skip, a bench that prints
# garbage and hangs: exit 1, each named, every finished step still in the
# summary); one killed mid-run (the steps it finished are in the output
# folder). Also: the limits add up to at most 480 s, at most 8 files come out.
#   tests/gpu_check_test.sh BUILD/tierzero
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
real_tierzero=$(readlink -f "${1:?usage: gpu_check_test.sh BUILD/tierzero}")
real_python=$(command -v python3)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
say_fail() { echo "FAIL: $*"; fail=1; }

# ---- the bundle of stand-ins
mkdir -p "$tmp/stage/bin" "$tmp/stage/lib" "$tmp/stage/data" "$tmp/bundle" "$tmp/path" "$tmp/caller/lib"
cat > "$tmp/stage/lib/ld-linux-x86-64.so.2" <<'SH'
#!/bin/bash
# ld.so --library-path P [--list] PROGRAM ARGS...
[ "$1" = --library-path ] || { echo "stub loader: expected --library-path" >&2; exit 127; }
export TZ_STUB_LIBPATH=$2
shift 2
echo "$TZ_STUB_LIBPATH" >> "$STUB_LOG/libpath"
if [ "$1" = --list ]; then
  bundle=$(cd "$(dirname "$0")" && pwd)
  echo "	libstdc++.so.6 => $bundle/libstdc++.so.6 (0x0)"
  echo "	libcublas.so.13 => /usr/local/cuda/lib64/libcublas.so.13 (0x0)"
  exit 0
fi
exec "$@"
SH
cat > "$tmp/stage/bin/has_driver" <<'SH'
#!/bin/bash
# Whether dlopen("libcuda.so.1") would succeed: only through the library path given to the loader.
IFS=: read -r -a dirs <<< "$TZ_STUB_LIBPATH"
for d in "${dirs[@]}"; do [ -e "$d/libcuda.so.1" ] && exit 0; done
exit 1
SH
cat > "$tmp/stage/bin/gpu_tests" <<'SH'
#!/bin/bash
echo "${TZ_REQUIRE_GPU:-unset}" > "$STUB_LOG/require_gpu"
json=
for a in "$@"; do case $a in --gtest_output=json:*) json=${a#--gtest_output=json:} ;; esac; done
if [ "${STUB_GPU_TESTS:-}" != skip ] && "$(dirname "$0")/has_driver"; then
  echo "[ RUN      ] GpuModel.TwoIdenticalRunsGiveIdenticalBits"; echo "[       OK ] GpuModel.TwoIdenticalRunsGiveIdenticalBits (5 ms)"
  [ -n "$json" ] && echo '{"testsuites": [{"name": "GpuModel", "testsuite": [{"name": "TwoIdenticalRunsGiveIdenticalBits", "result": "COMPLETED"}]}]}' > "$json"
  exit 0
fi
echo "[ RUN      ] GpuModel.TwoIdenticalRunsGiveIdenticalBits"
if [ "${TZ_REQUIRE_GPU:-}" = 1 ] && [ "${STUB_GPU_TESTS:-}" != skip ]; then
  echo "TZ_REQUIRE_GPU=1 but no GPU can be used (CUDA driver version is insufficient)"
  echo "[  FAILED  ] GpuModel.TwoIdenticalRunsGiveIdenticalBits (0 ms)"
  [ -n "$json" ] && echo '{"testsuites": [{"name": "GpuModel", "testsuite": [{"name": "TwoIdenticalRunsGiveIdenticalBits", "result": "COMPLETED", "failures": [{"failure": "no GPU"}]}]}]}' > "$json"
  exit 1
fi
echo "no GPU here (CUDA driver version is insufficient); scripts/gpu_check.sh runs this"
echo "[  SKIPPED ] GpuModel.TwoIdenticalRunsGiveIdenticalBits (0 ms)"
[ -n "$json" ] && echo '{"testsuites": [{"name": "GpuModel", "testsuite": [{"name": "TwoIdenticalRunsGiveIdenticalBits", "result": "SKIPPED"}]}]}' > "$json"
echo "[  PASSED  ] 0 tests."
exit 0
SH
cat > "$tmp/stage/bin/tierzero" <<SH
#!/bin/bash
# The real CPU CLI at tiny sizes: gpt2-124m -> gpt-tiny, llama-mini -> llama-tiny, T 1024 -> 64, B 8 -> 2.
args=()
device=
while [ \$# -gt 0 ]; do
  case \$1 in
    --device) device=\$2; shift 2; continue ;;
    gpt2-124m) args+=(gpt-tiny) ;;
    llama-mini) args+=(llama-tiny) ;;
    --seq-len) args+=(--seq-len 64); shift 2; continue ;;
    --micro-batch) args+=(--micro-batch 2); shift 2; continue ;;
    *) args+=("\$1") ;;
  esac
  shift
done
if [ "\$device" = cuda ] && ! "\$(dirname "\$0")/has_driver"; then
  echo "tierzero: CUDA: no usable device (cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version)" >&2
  exit 1
fi
unset TZ_DATA_DIR
exec "$real_tierzero" "\${args[@]}"
SH
cat > "$tmp/stage/bin/tierzero_gpu_bench" <<'SH'
#!/bin/bash
echo '{"check": "cublas_bf16_peak", "value": 791.5, "unit": "TFLOP/s", "ceiling": 989, "ceiling_of": "datasheet bf16 peak", "ratio": 0.800}'
echo '{"check": "quantize_int8", "value": inf, "unit": "GB/s", "ceiling": 4300, "ceiling_of": "device-to-device copy", "ratio": inf}'
echo '{"check": "gpt2_124m_train_tokens_per_s", "value": 412000, "unit": "tokens/s"}'
echo '{"check": "llama_1b_train_tokens_per_s", "value": 41000, "unit": "tokens/s"}'
if [ "${STUB_BENCH:-}" = hang ]; then printf '{"check": "gpt2_124m_train_mfu", "val'; sleep 600; fi
echo '{"check": "gpt2_124m_train_mfu", "value": 0.36, "unit": "TFLOP/s"}'
SH
cat > "$tmp/path/nvidia-smi" <<'SH'
#!/bin/bash
case "$*" in
  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-00000000-stub)" ;;
  --query-gpu*) echo "NVIDIA H200, 580.159.03, 143771 MiB, 1980 MHz" ;;
esac
SH
cat > "$tmp/path/python3" <<SH
#!/bin/bash
case "\${1:-}" in
  */bench/hf_export_check.py)
    [ "\${2:-}" = --export ] && [ -f "\$3/config.json" ] && [ -f "\$3/model.safetensors" ] \\
      || { echo "OSError: \${3:-?} does not appear to have a file named config.json"; exit 1; }
    echo '{"check": "hf_gpt2_export_vs_transformers", "value": 3.1e-06, "unit": "max relative difference"}'
    echo '{"check": "hf_gpt2_export_loads_in_transformers", "value": 1, "unit": "finite logits (1) or not (0)"}'
    exit 0 ;;
  */bench/gpt_vs_pytorch_gpu.py)
    echo '{"check": "pytorch_gpt2_124m_tokens_per_s", "value": 343000, "unit": "tokens/s", "mfu": 0.29}'
    echo '{"check": "pytorch_gpt2_124m_sdpa_tokens_per_s", "value": NaN, "unit": "tokens/s"}'
    echo '{"check": "pytorch_llama_1b_tokens_per_s", "value": 50000, "unit": "tokens/s"}'
    exit 0 ;;
esac
exec "$real_python" "\$@"
SH
chmod +x "$tmp/stage/lib/ld-linux-x86-64.so.2" "$tmp/stage/bin/"* "$tmp/path/"*
tar -C "$tmp/stage" -cJf "$tmp/bundle/tierzero-gpu.tar.xz" .
# The image's NVIDIA wheels (a namespace package, as pip lays them out) and driver folder.
mkdir -p "$tmp/site/nvidia/cu13/lib" "$tmp/site/nvidia/nccl/lib" "$tmp/driver/lib64" "$tmp/nodriver/lib64"
touch "$tmp/site/nvidia/cu13/lib/libcublas.so.13" "$tmp/site/nvidia/nccl/lib/libnccl.so.2" \
  "$tmp/driver/lib64/libcuda.so.1" "$tmp/driver/lib64/libnvidia-ml.so.1"

# check_run NAME DRIVER [VAR=VALUE...]: gpu_check.sh with the stand-ins; sets out (its folder), text and rc.
check_run() {
  local name=$1 driver=$2
  shift 2
  out=$tmp/$name/out
  mkdir -p "$tmp/$name/log"
  text=$(env "$@" STUB_LOG="$tmp/$name/log" TZ_NVIDIA_DIR="$tmp/$driver" PYTHONPATH="$tmp/site" LD_LIBRARY_PATH="$tmp/caller/lib" \
    PATH="$tmp/path:/usr/bin:/bin" TMPDIR="$tmp" bash "$root/scripts/gpu_check.sh" --bundle "$tmp/bundle" --out "$out" 2>&1)
  rc=$?
}
result_of() {  # result_of STEP: the result of STEP's last row in $out/summary.jsonl
  "$real_python" -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print([r["result"] for r in rows if r["step"] == sys.argv[2]][-1])' "$out/summary.jsonl" "$1" 2>/dev/null
}
expect() {  # expect STEP RESULT
  local got
  got=$(result_of "$1")
  [ "$got" = "$2" ] || say_fail "$name: step $1 is '$got', expected '$2'"
}
expect_text() { grep -qF -- "$1" <<< "$text" || say_fail "$name: no '$1' in the output"; }
all_steps=(devices gpu_tests multi_gpu train resume export hf llama bench pytorch)

# ---- the limits
total=$(bash "$root/scripts/gpu_check.sh" --limits | awk '$1 == "total" { print $2 }')
[ -n "$total" ] && [ "$total" -le 480 ] || say_fail "the steps' limits add up to '$total' s, over 480"

# ---- a healthy machine
check_run healthy driver
[ $rc -eq 0 ] || say_fail "healthy: exit $rc"
for s in devices gpu_tests train resume export hf llama bench pytorch; do expect $s pass; done
expect multi_gpu na
expect_text "libcuda.so.1 => $tmp/driver/lib64/libcuda.so.1"
expect_text "libnvidia-ml.so.1 => $tmp/driver/lib64/libnvidia-ml.so.1"
expect_text "every loss bit for bit"
expect_text "gpt2_124m_tierzero_vs_pytorch_eager"
[ "$(cat "$tmp/healthy/log/require_gpu" 2>/dev/null)" = 1 ] || say_fail "healthy: the GPU tests ran without TZ_REQUIRE_GPU=1"
path=$(head -n 1 "$tmp/healthy/log/libpath")
IFS=: read -r -a dirs <<< "$path"
[[ ${dirs[0]} == */lib && -x ${dirs[0]}/ld-linux-x86-64.so.2 ]] || say_fail "healthy: the library path does not start with the bundle's lib/: $path"
pos() { local i; for i in "${!dirs[@]}"; do [ "${dirs[$i]}" = "$1" ] && { echo "$i"; return; }; done; echo -1; }
c=$(pos "$tmp/caller/lib") n=$(pos "$tmp/site/nvidia/nccl/lib") b=$(pos "$tmp/site/nvidia/cu13/lib") d=$(pos "$tmp/driver/lib64")
[ "$c" -gt 0 ] && [ "$n" -gt "$c" ] && [ "$b" -gt 0 ] && [ "$d" -gt "$n" ] && [ "$d" -gt "$b" ] ||
  say_fail "healthy: the library path lacks, or misorders, the caller's LD_LIBRARY_PATH, the NCCL and cuBLAS wheels and the driver: $path"
files=$(ls "$out")
[ "$(wc -l <<< "$files")" -le 8 ] || say_fail "healthy: more than 8 files in the output folder: $files"
[ "$files" = "$(printf 'gpu_check.json\ngpu_check.md\nlogs.tar.gz\nsummary.jsonl')" ] || say_fail "healthy: the output folder holds: $files"
tar -tzf "$out/logs.tar.gz" | grep -q 'train.jsonl' || say_fail "healthy: logs.tar.gz lacks the training metrics"
"$real_python" - "$out/gpu_check.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
steps = [r["step"] for r in d["steps"]]
assert steps == ["devices", "gpu_tests", "multi_gpu", "train", "resume", "export", "hf", "llama", "bench", "pytorch"], steps
f = d["figures"]
assert (f.get("quantize_int8") or {}).get("value") is None, f   # `inf` in the bench's line: skipped, or null
assert f["cublas_bf16_peak"]["value"] == 791.5, f
assert abs(d["ratios"]["gpt2_124m_tierzero_vs_pytorch_eager"] - 412000 / 343000) < 1e-9, d["ratios"]
assert "gpt2_124m_tierzero_vs_pytorch_sdpa" not in d["ratios"], d["ratios"]   # NaN: no ratio
PY
[ $fail -eq 0 ] || echo "$text"

# ---- a broken machine: no driver library, GPU tests that skip and pass, a bench that prints garbage and hangs
before=$fail
check_run broken nodriver STUB_GPU_TESTS=skip STUB_BENCH=hang TZ_CHECK_LIMIT_S=4
[ $rc -eq 1 ] || say_fail "broken: exit $rc, expected 1"
expect devices fail
expect_text "libcuda.so.1 not found"
expect gpu_tests fail
expect_text "skipped: GpuModel.TwoIdenticalRunsGiveIdenticalBits"
expect train fail
expect bench timeout
n=$("$real_python" -c 'import json, sys; print(len([l for l in open(sys.argv[1])]))' "$out/summary.jsonl")
[ "$n" -eq ${#all_steps[@]} ] || say_fail "broken: $n rows in summary.jsonl, expected ${#all_steps[@]}"
grep -q '"cublas_bf16_peak"' "$out/gpu_check.json" || say_fail "broken: the bench's finished figure is not in gpu_check.json"
expect_text "gpu_check: failed: devices, gpu_tests, train"
[ $fail -eq $before ] || echo "$text"

# ---- killed mid-run (the GPU machine's own limit): the steps it finished are in the output folder
before=$fail
name=killed out=$tmp/killed/out
mkdir -p "$tmp/killed/log"
STUB_LOG="$tmp/killed/log" TZ_NVIDIA_DIR="$tmp/driver" PYTHONPATH="$tmp/site" PATH="$tmp/path:/usr/bin:/bin" TMPDIR="$tmp" \
  setsid bash "$root/scripts/gpu_check.sh" --bundle "$tmp/bundle" --out "$out" > "$tmp/killed.log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q '"step": "train"' "$out/summary.jsonl" 2>/dev/null && break; sleep 0.1; done
kill -KILL -- -"$job" 2>/dev/null
wait "$job" 2>/dev/null
text=$(cat "$tmp/killed.log")
expect devices pass
expect train pass
[ -f "$out/logs.tar.gz" ] && [ -f "$out/gpu_check.md" ] || say_fail "killed: no logs.tar.gz or gpu_check.md after the finished steps"
grep -q "| train | correctness | pass |" "$out/gpu_check.md" || say_fail "killed: gpu_check.md lacks the finished train step"
grep -q '"step": "bench"' "$out/summary.jsonl" && say_fail "killed: the run was not killed before its end"
[ $fail -eq $before ] || echo "$text"

[ $fail -eq 0 ] && echo "ok: gpu_check.sh: a healthy run passes with every row; a missing driver, skipped GPU tests and a hung, garbled bench each fail by name with every finished row kept; a killed run keeps its finished steps; limits $total s"
exit $fail
