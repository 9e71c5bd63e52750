#!/usr/bin/env bash
# The GPU checks in one command, one table at the end.
#   scripts/gpu_check.sh --bundle DIR   on a bare GPU machine: runs the bundle
#                                       that scripts/gpu_bundle.sh built (no
#                                       compiler, apt, network or MPI needed)
#   scripts/gpu_check.sh                where a GPU and the CUDA toolkit are at
#                                       hand: builds the bundle, then runs it
# Steps, each under its own time limit (TZ_CHECK_LIMIT_S caps them all, for
# tests), each recorded as pass, fail, timeout or skip, none stopping the
# others:
#   devices     nvidia-smi -L, the CPU cores this process may use
#   gpu_tests   every GPU and NCCL test (quantisers bit for bit with the CPU,
#               layers, model, engine on the GPU against the CPU, ...), one GPU
#   multi_gpu   the NCCL and engine tests on every GPU (needs mpirun; skipped
#               with one GPU or without it)
#   bench       tierzero_gpu_bench: GEMM vs cuBLAS on random data, quantise and
#               dequantise vs a device copy, the LayerNorm backward's column
#               sums, gpt2-124m tokens/s and MFU
#   train       tierzero train --device cuda, gpt2-124m on the built-in corpus,
#               30 steps, --check-comm-order, a checkpoint at the end
#   export      that checkpoint as a Hugging Face GPT-2 directory
#   llama       tierzero train --device cuda, llama-mini (RMSNorm, RoPE, GQA,
#               SwiGLU kernels in the engine), 20 steps, --check-comm-order
#   pytorch     the same gpt2-124m step in PyTorch eager (bench/gpt_vs_pytorch_gpu.py)
#   hf          tierzero's GPT-2 layout in transformers (bench/hf_export_check.py)
# Prints the table (markdown) and, when $OUT is set, writes it as
# $OUT/gpu_check.json. Exit status: 0 when no step failed or timed out.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/bundle_env.sh"
bundle=
if [ "${1:-}" = "--bundle" ]; then
  bundle=${2:?"--bundle needs the bundle's folder"}
elif [ $# -gt 0 ]; then
  echo "usage: scripts/gpu_check.sh [--bundle DIR]" >&2
  exit 2
else
  "$root/scripts/gpu_bundle.sh" || exit 2
  bundle=$root/build-gpu/bundle
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tierzero-gpu-check.XXXXXX")
tz_bundle_open "$bundle" "$work/bundle" || exit 2
logs=$work/logs
mkdir -p "$logs"
declare -a names=() results=() seconds=()

# step NAME LIMIT_S COMMAND...: runs it under `timeout`, output to logs/NAME.log.
step() {
  local name=$1 limit=$2 start rc result
  shift 2
  [ -n "${TZ_CHECK_LIMIT_S:-}" ] && [ "$TZ_CHECK_LIMIT_S" -lt "$limit" ] && limit=$TZ_CHECK_LIMIT_S
  echo "gpu_check: $name (limit ${limit} s)"
  start=$(date +%s)
  timeout --kill-after=5 "$limit" bash -c '"$@"' "$name" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  case $rc in
    0) result=pass ;;
    77) result=skip ;;
    124 | 137) result=timeout ;;
    *) result="fail (exit $rc)" ;;
  esac
  names+=("$name") results+=("$result") seconds+=("$(($(date +%s) - start))")
  [ "$result" = pass ] || tail -n 20 "$logs/$name.log" | sed "s/^/  $name: /"
}
skip() { names+=("$1") results+=("skip: $2") seconds+=(0); echo "gpu_check: $1 skipped: $2"; }

devices() {
  nvidia-smi -L || echo "no nvidia-smi"
  echo "cores usable by this process: $(nproc) ($(taskset -cp $$ 2>/dev/null || echo 'taskset missing'))"
  echo "bundle: $TZ_BUNDLE; libraries: $TZ_LIBPATH"
  tz_bundle_libs tierzero
}
export -f devices tz_run tz_bundle_libs  # for the steps' shells (step runs each under timeout)
step devices 30 devices
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
step gpu_tests 300 tz_run gpu_tests --gtest_output="json:$logs/gpu_tests.json"
if [ "$gpus" -gt 1 ] && command -v mpirun >/dev/null; then
  step multi_gpu 300 mpirun --bind-to none -np "$gpus" "$TZ_BUNDLE/lib/ld-linux-x86-64.so.2" --library-path "$TZ_LIBPATH" \
    "$TZ_BUNDLE/bin/gpu_tests" --gtest_filter='Nccl*:GpuEngine*'
else
  skip multi_gpu "$gpus GPU(s)$(command -v mpirun >/dev/null || echo ', no mpirun')"
fi
step bench 240 tz_run tierzero_gpu_bench
step train 300 tz_run tierzero train --device cuda --model gpt2-124m --data builtin --steps 30 --micro-batch 8 --seq-len 1024 \
  --check-comm-order --log-every 10 --metrics "$logs/train.jsonl" --save-dir "$work/ckpt" --save-every 30
step export 60 tz_run tierzero ckpt export "$work/ckpt/latest" --format hf-gpt2 --output "$work/hf"
step llama 120 tz_run tierzero train --device cuda --model llama-mini --data builtin --steps 20 --micro-batch 8 \
  --check-comm-order --log-every 10 --metrics "$logs/llama.jsonl"
step pytorch 240 python3 "$root/bench/gpt_vs_pytorch_gpu.py"
step hf 120 python3 "$root/bench/hf_export_check.py" --export "$work/hf"

# The table: every step, the GPU tests one by one, and the figures against their targets.
python3 - "$logs" "${OUT:-}" "${names[@]}" -- "${results[@]}" -- "${seconds[@]}" <<'PY'
import json, os, sys
logs, out = sys.argv[1], sys.argv[2]
rest = sys.argv[3:]
i, j = rest.index("--"), len(rest) - 1 - rest[::-1].index("--")
names, results, seconds = rest[:i], rest[i + 1:j], rest[j + 1:]
rows = [{"step": n, "result": r, "seconds": int(s)} for n, r, s in zip(names, results, seconds)]
def lines(name):
    path = os.path.join(logs, name)
    return [json.loads(l) for l in open(path) if l.startswith("{")] if os.path.exists(path) else []
tests = []
if os.path.exists(os.path.join(logs, "gpu_tests.json")):
    for suite in json.load(open(os.path.join(logs, "gpu_tests.json"))).get("testsuites", []):
        for t in suite.get("testsuite", []):
            result = "fail" if t.get("failures") else ("skip" if t.get("result") == "SKIPPED" else "pass")
            tests.append({"test": f"{suite['name']}.{t['name']}", "result": result})
figures = {r["check"]: r for r in lines("bench.log") + lines("pytorch.log") + lines("hf.log") if "check" in r and "value" in r}
train = lines("train.jsonl")
if train:
    steady = [s["tokens_per_s"] for s in train[5:]] or [s["tokens_per_s"] for s in train]
    tps = sorted(steady)[len(steady) // 2]
    ref = figures.get("gpt2_124m_train_tokens_per_s", {})
    mfu = figures.get("gpt2_124m_train_mfu", {})
    per_token = mfu["value"] * 1e12 / ref["value"] if ref.get("value") and mfu.get("value") else None
    figures["engine_gpt2_124m_tokens_per_s"] = {"check": "engine_gpt2_124m_tokens_per_s", "value": tps, "unit": "tokens/s"}
    if per_token and mfu.get("ceiling"):
        figures["engine_gpt2_124m_mfu"] = {"check": "engine_gpt2_124m_mfu", "value": tps * per_token / (mfu["ceiling"] * 1e12),
                                           "unit": "of the datasheet peak", "target": 0.40}
    pt = figures.get("pytorch_gpt2_124m_tokens_per_s", {}).get("value")
    if pt:
        figures["engine_vs_pytorch_eager"] = {"check": "engine_vs_pytorch_eager", "value": tps / pt, "unit": "x", "target": 1.2}
targets = {"gemm_gpt2_mlp_bf16": 0.90, "quantize_int8": 0.70, "dequantize_int8": 0.70, "quantize_int4": 0.70, "dequantize_int4": 0.70}
print("\n| step | result | seconds |\n|---|---|---|")
for r in rows:
    print(f"| {r['step']} | {r['result']} | {r['seconds']} |")
if tests:
    print("\n| GPU test | result |\n|---|---|")
    for t in tests:
        print(f"| {t['test']} | {t['result']} |")
print("\n| figure | value | ceiling | ratio | target |\n|---|---|---|---|---|")
for name, f in figures.items():
    ceiling, ratio = f.get("ceiling"), f.get("ratio")
    target = f.get("target", targets.get(name))
    shown = ratio if ratio is not None else f.get("value")
    print(f"| {name} | {f.get('value')} {f.get('unit', '')} | {ceiling if ceiling is not None else '-'} {f.get('ceiling_of', '')} | "
          f"{ratio if ratio is not None else '-'} | {target if target is not None else '-'}"
          f"{'' if target is None or not isinstance(shown, (int, float)) else (' met' if shown >= target else ' NOT met')} |")
if out:
    os.makedirs(out, exist_ok=True)
    json.dump({"steps": rows, "tests": tests, "figures": figures}, open(os.path.join(out, "gpu_check.json"), "w"), indent=1)
    print(f"\nwrote {os.path.join(out, 'gpu_check.json')}")
PY
status=0
for r in "${results[@]}"; do case $r in pass | skip*) ;; *) status=1 ;; esac; done
[ -n "${OUT:-}" ] && cp -r "$logs" "$OUT/gpu_check_logs" 2>/dev/null
exit $status
