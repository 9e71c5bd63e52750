#!/usr/bin/env bash
# Smoke test of the emulated cluster (scripts/cluster.sh): 2 nodes x 1
# package x 2 ranks, a few training steps across shaped namespace links.
# Skipped (exit 77, ctest SKIP_RETURN_CODE) where namespaces or tc are not permitted.
source "$(dirname "${BASH_SOURCE[0]}")/cluster_lib.sh"
export NODES=2 NODE_PKGS=1 GPUS=2 NODE_RATE=2gbit WORLD_RATE=400mbit
trap '"$cluster" down' EXIT
"$cluster" up || exit 1
tmp=$(mktemp -d)
"$cluster" run -- tierzero train --strategy hier3 --model gpt-tiny --seq-len 32 --micro-batch 2 --steps 3 \
  --metrics "$tmp/m.jsonl" || { echo "FAIL: training across the cluster"; exit 1; }
python3 - "$tmp/m.jsonl" <<'PY' || exit 1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 3, rows
assert rows[-1]["bytes_per_level"]["world"] > 0, rows[-1]
print("ok: 3 steps across 2 namespaces, world bytes per step", rows[-1]["bytes_per_level"]["world"])
PY
# Tensor parallelism on the package (its two ranks share memory), zero3 over the world: the bytes into each
# package and node that the interfaces count over the run, per step, against the simulator's physical bytes
# (which once counted one tensor member's data-parallel hops per package: half). Start-up's own traffic (MPI's
# wire-up, the first step's splits) is in the counters too: 20 steps keep it under a few percent.
"$cluster" counters > "$tmp/before.json"
"$cluster" run -- tierzero train --strategy zero3 --tp 2 --tp-level package --model gpt-tiny --seq-len 32 --micro-batch 2 \
  --steps 20 --log-every 1000 > "$tmp/tp.log" 2>&1 || { echo "FAIL: tensor-parallel training across the cluster"; tail -3 "$tmp/tp.log"; exit 1; }
"$cluster" counters > "$tmp/after.json"
"$(dirname "${BASH_SOURCE[0]}")/../build/tierzero" simulate --system cpu --topology package=2,world=2 --ranks 4 --strategy zero3 --tp 2 \
  --tp-level package --model gpt-tiny --seq-len 32 --micro-batch 2 --json > "$tmp/sim.json" 2>/dev/null || { echo "FAIL: simulate"; exit 1; }
python3 - "$tmp" <<'PY' || exit 1
import json, sys
d = sys.argv[1]
before, after = (json.load(open(f"{d}/{w}.json")) for w in ("before", "after"))
sim = json.loads(open(f"{d}/sim.json").readline())["physical_bytes"]
for key, group, predicted in (("package", "packages", "package_links"), ("node", "nodes", "node_nics")):
    measured = (after[f"{key}_rx_bytes"] - before[f"{key}_rx_bytes"]) / after[group] / 20
    ratio = sim[predicted] / measured
    print(f"{'ok' if 0.9 <= ratio <= 1.02 else 'FAIL'}: TP 2 on the package, zero3: bytes into a {key} per step "
          f"{measured:.0f} measured, {sim[predicted]:.0f} predicted ({ratio:.3f})")
    assert 0.9 <= ratio <= 1.02
PY
rm -rf "$tmp"
"$cluster" down
[ -z "$(ip netns list | grep '^tz-')" ] && echo "ok: down removed every namespace" || { echo "FAIL: namespaces left"; exit 1; }
