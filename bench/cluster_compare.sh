#!/usr/bin/env bash
# The strategies side by side on the emulated cluster (scripts/cluster.sh,
# default 2 nodes x 2 packages x 2 ranks, node links 2 Gbit/s, 400 Mbit/s of
# world links per node through a NIC per package): measures the links (bench comm --write-system), trains the
# same model for the same steps with every strategy, asks the simulator for
# the same table with the measured system, and prints one JSON line per
# strategy: measured and predicted step time, tokens/s, bytes per level,
# physical bytes per step into a package and into a node (the interfaces'
# counters over the run / steps, beside the simulator's) and the step-time
# ratio to zero3, and where the step's time went (--breakdown: medians over
# the steps of the mean over ranks: compute, waits, and the executor's time
# per kind and level during the waits). Needs root (namespaces).
# A strategy named S-pipelined is S's plan file with its hops pipelined
# (hop_chunk_bytes = HOP_CHUNK, bytes of each rank's part per chunk), trained
# with --plan and simulated with --hop-chunk-bytes: hier3-pipelined beside
# hier3 in the same run. A strategy named S-tpN (or S-tpN-sp) is S over the
# data ranks with tensor parallelism of degree N on the package level
# (--tp N --tp-level package, and -sp: --sp), trained and simulated alike:
# STRATEGIES="zeropp-tp2-sp hier3 zeropp" MODEL=llama-mini for TP on the
# package's fast link against the hierarchical plans.
#   MODEL=gpt-mini SEQ=128 BATCH=1 STEPS=12 QUEUES=2 HOP_CHUNK=65536 bench/cluster_compare.sh
# (QUEUES: the engine's communication queues, --comm-queues; OUT: where the
# run's files go, default build/cluster.)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cluster="$root/scripts/cluster.sh"
MODEL=${MODEL:-gpt-mini} SEQ=${SEQ:-128} BATCH=${BATCH:-1} STEPS=${STEPS:-12} QUEUES=${QUEUES:-2} HOP_CHUNK=${HOP_CHUNK:-65536}
STRATEGIES=${STRATEGIES:-"zero3 zeropp mics hier3 hier3-pipelined ddp"}
out=${OUT:-$root/build/cluster}
ranks=$((${NODES:-2} * ${NODE_PKGS:-2} * ${GPUS:-2}))  # scripts/cluster.sh's layout and defaults
mkdir -p "$out"
trap '"$cluster" down' EXIT
"$cluster" up
"$cluster" run -- tierzero bench comm --sizes 1048576,8388608 --iters 2 --json --write-system "$out/system.toml" \
  --system-name emulated-cluster --calibrate-model "$MODEL" --calibrate-seq-len "$SEQ" --calibrate-micro-batch "$BATCH" > "$out/comm.jsonl"
for s in $STRATEGIES; do
  name=$s tensor=()
  if [[ $name =~ ^(.*)-tp([0-9]+)(-sp)?$ ]]; then  # tensor parallelism on the package level
    name=${BASH_REMATCH[1]} tensor=(--tp "${BASH_REMATCH[2]}" --tp-level package)
    [ -n "${BASH_REMATCH[3]}" ] && tensor+=(--sp)
  fi
  base=${name%-pipelined} plan=(--strategy "$name") chunk=()
  if [ "$base" != "$name" ]; then  # the strategy's plan file with its hops pipelined
    sed "/^name = /a hop_chunk_bytes = $HOP_CHUNK" "$root/data/plans/$base.toml" > "$out/plan-$s.toml"
    plan=(--plan "$out/plan-$s.toml") chunk=(--hop-chunk-bytes "$HOP_CHUNK")
  fi
  "$cluster" counters > "$out/counters-$s-before.json"
  "$cluster" run -- tierzero train "${plan[@]}" "${tensor[@]}" --model "$MODEL" --seq-len "$SEQ" --micro-batch "$BATCH" --no-recompute --steps "$STEPS" \
    --param-dtype bf16 --comm-queues "$QUEUES" --breakdown --metrics "$out/train-$s.jsonl" > "$out/train-$s.log" 2>&1 || echo "{\"strategy\": \"$s\", \"error\": \"see $out/train-$s.log\"}"
  "$cluster" counters > "$out/counters-$s-after.json"
  "$root/build/tierzero" simulate --system "$out/system.toml" --model "$MODEL" --ranks "$ranks" --seq-len "$SEQ" --micro-batch "$BATCH" \
    --recompute false --strategy "$base" "${chunk[@]}" "${tensor[@]}" --json > "$out/sim-$s.jsonl"
done
QUEUES=$QUEUES python3 - "$out" $STRATEGIES <<'PY'
import json, statistics, sys, os
out, strategies = sys.argv[1], sys.argv[2:]
rows = {}
for s in strategies:
    path = os.path.join(out, f"train-{s}.jsonl")
    if not os.path.exists(path):
        continue
    m = [json.loads(l) for l in open(path)][1:]  # the first step warms up
    sim = json.loads(open(os.path.join(out, f"sim-{s}.jsonl")).readline())
    rows[s] = {"strategy": s, "measured_step_s": statistics.median(r["step_time_s"] for r in m),
               "predicted_step_s": sim["step_time_s"], "tokens_per_s": statistics.median(r["tokens_per_s"] for r in m),
               "bytes_per_level": m[-1]["bytes_per_level"], "predicted_bytes_per_level": sim["bytes_per_level"],
               "memory_bytes": m[-1]["memory_bytes"], "matmul": m[-1].get("matmul"), "queues": int(os.environ.get("QUEUES", "2"))}
    # The breakdown: per step the mean over ranks, then the median over steps.
    def med(f):
        return statistics.median(statistics.mean(f(b) for b in r["breakdown"]) for r in m)
    bd = {k: med(lambda b, k=k: b[k]) for k in ("forward_s", "backward_s", "optimizer_s", "gather_wait_s", "reduce_wait_s",
                                                "control_wait_s", "slot_wait_s", "tensor_wait_s", "gather_behind_reduce_s")}
    for kind in ("gather", "reduce", "control", "tensor"):
        bd["exposed_" + kind] = {p: med(lambda b, kind=kind, p=p: b["exposed"][kind][p]) for p in ("world", "node", "package", "quant", "local")}
    rows[s]["breakdown"] = bd
    # Interface counters over the whole run (start-up included) per step, per package and per node.
    before, after = (json.load(open(os.path.join(out, f"counters-{s}-{w}.json"))) for w in ("before", "after"))
    steps = len(m) + 1
    for key, group, predicted in (("package", "packages", "package_links"), ("node", "nodes", "node_nics")):
        measured = (after[f"{key}_rx_bytes"] - before[f"{key}_rx_bytes"]) / after[group] / steps
        rows[s][f"{key}_rx_bytes_per_step"] = measured
        rows[s][f"predicted_{key}_rx_bytes_per_step"] = sim["physical_bytes"][predicted]
        rows[s][f"{key}_predicted_vs_measured"] = sim["physical_bytes"][predicted] / measured
base = rows.get("zero3", {}).get("measured_step_s")
for r in rows.values():
    r["step_time_ratio_to_zero3"] = r["measured_step_s"] / base if base else None
    r["predicted_vs_measured"] = r["predicted_step_s"] / r["measured_step_s"]
    print(json.dumps(r))
PY
