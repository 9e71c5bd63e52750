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
rm -rf "$tmp"
"$cluster" down
[ -z "$(ip netns list | grep '^tz-')" ] && echo "ok: down removed every namespace" || { echo "FAIL: namespaces left"; exit 1; }
