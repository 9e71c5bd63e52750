#!/usr/bin/env bash
# What the metrics rows say the engine allocated is what it holds: for the
# demo's layout (hier3 on package=2,node=2,world=2, whose hierarchies grow
# their scratch during the first step) and for flat zero3, each step's row's
# memory_bytes add up to `tierzero simulate --json`'s total less its runtime,
# byte for byte (the simulator counts the engine's allocations by the
# engine's own sizing rules: docs/simulator.md).
#   metrics_memory_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/script_lib.sh"
# check NP TOPOLOGY STRATEGY: a 2-step run against the simulator.
check() {
  local job=(--model gpt-tiny --micro-batch 4 --seq-len 64 --topology "$2" --strategy "$3")
  "$tz" simulate --system cpu --ranks "$1" --recompute full "${job[@]}" --json > "$tmp/sim.json" 2>/dev/null || { bad "simulate $3"; return; }
  "$mpirun" --oversubscribe -np "$1" "$tz" train "${job[@]}" --steps 2 --log-every 1000 --metrics "$tmp/m.jsonl" > "$tmp/train.log" 2>&1 ||
    { tail -n 3 "$tmp/train.log"; bad "train $3"; return; }
  python3 - "$tmp/sim.json" "$tmp/m.jsonl" "$3 on $2" <<'PY' || fail=1
import json, sys
sim = json.load(open(sys.argv[1]))
want = sim["memory_bytes"]["total"] - sim["memory_bytes"]["runtime"]
rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
bad = [(r["step"], sum(r["memory_bytes"].values())) for r in rows if sum(r["memory_bytes"].values()) != want]
print(f"{'FAIL' if bad else 'ok'}: {sys.argv[3]}: the simulator counts {want:.0f} bytes; rows that differ (step, bytes): {bad}")
sys.exit(1 if bad else 0)
PY
  rm -f "$tmp/m.jsonl"
}
check 8 package=2,node=2,world=2 hier3
check 2 node=2 zero3
exit $fail
