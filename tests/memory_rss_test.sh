#!/usr/bin/env bash
# The simulator's memory per rank for tierzero's own engine against what a
# rank really takes: for several models, strategies and offload placements,
# `tierzero simulate --json` predicts (on the cpu system, whose host memory
# is the rank's memory: the device total plus the offloaded host bytes) and
# a 1-step training with the same model, batch, plan and ranks measures
# (rank 0's peak resident set, peak_rss_bytes of its metrics row), tensor-parallel runs among them. Each
# prediction must be within 10% of the measurement. What the process itself
# holds (program, libraries, MPI: the device's runtime_gb) depends on the
# build (a CUDA and NCCL build maps ~0.16 GB more), so it is measured first,
# once, as a gpt-tiny rank's peak RSS less the allocations the simulator
# counts for it, and takes the place of the cpu device's runtime_gb.
# Usage: memory_rss_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/script_lib.sh"
cpu_device="$(dirname "${BASH_SOURCE[0]}")/../data/devices/cpu.toml"
# measure NP MODEL MICRO_BATCH SEQ_LEN TOPOLOGY STRATEGY RECOMPUTE [OPTIONS...]: writes $tmp/sim.json and $tmp/m.jsonl.
measure() {
  local np=$1 model=$2 mb=$3 seq=$4 topo=$5 strategy=$6 recompute=$7
  shift 7
  local job=(--model "$model" --micro-batch "$mb" --seq-len "$seq" --topology "$topo" --strategy "$strategy" "$@")
  local train_recompute=--recompute
  [ "$recompute" = none ] && train_recompute=--no-recompute
  "$tz" simulate --system cpu --ranks "$np" --recompute "$recompute" "${job[@]}" --json > "$tmp/sim.json" 2>"$tmp/sim.log" ||
    { echo "simulate: $(tail -n 2 "$tmp/sim.log")"; return 1; }
  "$mpirun" --oversubscribe -np "$np" "$tz" train "${job[@]}" "$train_recompute" --steps 1 --log-every 1000 --metrics "$tmp/m.jsonl" > "$tmp/train.log" 2>&1 ||
    { echo "train: $(tail -n 3 "$tmp/train.log")"; return 1; }
}
# The rows' prediction less the cpu device's runtime_gb (what the measurement replaces; the runtime part keeps the
# rest: Open MPI's temporaries of the gradient reduction), and the measurement (bytes).
read_pair() {
  python3 - "$tmp/sim.json" "$tmp/m.jsonl" "$cpu_device" <<'PY'
import json, sys, tomllib
sim = json.load(open(sys.argv[1]))
row = [json.loads(l) for l in open(sys.argv[2]) if l.strip()][-1]
device_runtime = tomllib.load(open(sys.argv[3], "rb"))["device"]["runtime_gb"] * 1e9
print(sim["memory_bytes"]["total"] - device_runtime + sim["host_bytes"], row["peak_rss_bytes"])
PY
}
msg=$(measure 2 gpt-tiny 1 32 node=2 ddp none) || { echo "FAIL: the runtime's measurement: $msg"; exit 1; }
read -r allocated rss < <(read_pair)
runtime=$(python3 -c "print($rss - $allocated)")
echo "runtime (the process without the engine's allocations): $(python3 -c "print(f'{$runtime / 1e9:.3f}')") GB"

# check NP MODEL MICRO_BATCH SEQ_LEN TOPOLOGY STRATEGY RECOMPUTE(full|none) [OPTIONS...]: one configuration.
check() {
  local extra="${*:8}" msg
  local what="$2 $6 $1 ranks mb $3 seq $4 recompute $7${extra:+ $extra}"
  msg=$(measure "$@") || { echo "FAIL: $what: $msg"; fail=1; return; }
  read -r allocated rss < <(read_pair)
  python3 - "$allocated" "$runtime" "$rss" "$what" <<'PY' || fail=1
import sys
allocated, runtime, measured = map(float, sys.argv[1:4])
predicted = allocated + runtime
err = predicted / measured - 1
ok = abs(err) <= 0.10
print(f"{'ok' if ok else 'FAIL'}: {sys.argv[4]}: predicted {predicted / 1e9:.3f} GB, measured peak RSS {measured / 1e9:.3f} GB ({err:+.1%})")
sys.exit(0 if ok else 1)
PY
}
check 2 gpt2-124m 2 128 node=2 zero3 none
check 2 gpt2-124m 2 128 node=2 zero3 full --offload-optimizer cpu
check 2 gpt-mini 4 256 node=2 ddp none
check 4 gpt-mini 4 256 node=2 zero3 full
check 4 llama-mini 4 256 node=2 zeropp none
check 4 llama-mini 4 256 node=2 zero3 none --offload-optimizer cpu --offload-param cpu
check 4 gpt-mini 4 256 node=4 zero3 full --tp 2
check 4 gpt-mini 4 256 node=4 zeropp none --tp 2
exit $fail
