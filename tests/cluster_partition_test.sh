#!/usr/bin/env bash
# A network partition on the emulated cluster (scripts/cluster.sh): 2 nodes x
# 2 packages x 2 ranks, hier3 gpt-tiny under tierzero launch --max-restarts 0,
# node 1's world link taken down mid-run. Every rank times out (--comm-timeout)
# and writes a failure flight record, but mpirun waits for the daemons it can
# no longer reach: launch must end the job --abort-grace seconds after the ranks
# gave up (SIGTERM to its process group, SIGKILL 10 s later), count it as exit 3,
# and its verdict must name the partition of level world between the two nodes
# (ranks 0-3 and 4-7), not a rank.
# Skipped (exit 77, ctest SKIP_RETURN_CODE) where namespaces or tc are not permitted.
# Usage: cluster_partition_test.sh TIERZERO
tz=$1
source "$(dirname "${BASH_SOURCE[0]}")/cluster_lib.sh"
export NODES=2 NODE_PKGS=2 GPUS=2 NODE_RATE=2gbit WORLD_RATE=400mbit
timeout_s=15 grace_s=10
tmp=$(mktemp -d)
# Whatever the job left in the namespaces (daemons mpirun could not reach), then the cluster.
cleanup() {
  ip netns exec tz-fabric ip link set up-n1 up 2>/dev/null
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^tz-n'); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
  done
  "$cluster" down
  rm -rf "$tmp"
}
trap cleanup EXIT
"$cluster" up || exit 1
fail=0

"$tz" launch --max-restarts 0 --backoff 0 --abort-grace $grace_s -- "$cluster" run -- "$tz" train --strategy hier3 --model gpt-tiny \
  --seq-len 32 --micro-batch 2 --steps 100000 --log-every 100000 --comm-timeout $timeout_s --save-dir "$tmp/run" \
  --metrics "$tmp/m.jsonl" > "$tmp/launch.log" 2>&1 &
launcher=$!
for _ in $(seq 1200); do [ "$( (wc -l < "$tmp/m.jsonl") 2>/dev/null || echo 0)" -ge 3 ] && break; sleep 0.1; done
[ "$( (wc -l < "$tmp/m.jsonl") 2>/dev/null || echo 0)" -ge 3 ] || { echo "FAIL: the run made no 3 steps"; tail -20 "$tmp/launch.log"; exit 1; }
cut=$(date +%s.%N)
ip netns exec tz-fabric ip link set up-n1 down
limit=$((timeout_s + grace_s + 10 + 15))  # the timeout, the grace, SIGTERM to SIGKILL, and the ranks' own slack (dumps, a step in flight)
for _ in $(seq $((limit * 10 + 300))); do kill -0 $launcher 2>/dev/null || break; sleep 0.1; done
if kill -0 $launcher 2>/dev/null; then
  echo "FAIL: the job still runs $(python3 -c "import time; print(round(time.time() - $cut))") s after the partition"
  kill -TERM $launcher; sleep 12; kill -9 $launcher 2>/dev/null
  fail=1
fi
wait $launcher; rc=$?
took=$(python3 -c "import time; print(round(time.time() - $cut, 1))")
ip netns exec tz-fabric ip link set up-n1 up
echo "launch ended ${took} s after the partition (exit $rc); the bound: $limit s"
if [ $rc -eq 3 ] && python3 -c "import sys; sys.exit(0 if $took <= $limit else 1)" &&
   grep -q "^tierzero launch: the ranks gave up (ranks .*comm-timeout" "$tmp/launch.log" &&
   grep -q "did not end within $grace_s s (--abort-grace) after its ranks gave up" "$tmp/launch.log" &&
   grep -q "^tierzero launch: giving up after 0 restarts; attempt 1 ended: ended by the launcher $grace_s s after its ranks gave up" "$tmp/launch.log"; then
  echo "ok: launch ended the partitioned job ${took} s after the cut (comm timeout $timeout_s s + grace $grace_s s), exit 3"
else
  echo "FAIL: launch did not end the partitioned job as it should (exit $rc, ${took} s)"; grep "tierzero launch" "$tmp/launch.log" | tail -8; fail=1
fi
if grep -q "^verdict: the ranks wait for each other across level world: .* between the node groups ranks 0-3 and ranks 4-7, and no rank was stopped or late" "$tmp/launch.log" &&
   "$tz" diagnose "$tmp/run" --json | python3 -c '
import json, sys
v = json.load(sys.stdin)
s = v["suspect"]
assert s["how"] == "partition" and s["level"] == "world" and s["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]], s
assert v["dead"] == [] and v["mismatches"] == [], v
'; then
  echo "ok: the verdict names the partition of level world between nodes {0-3} and {4-7}"
  grep "^verdict:" "$tmp/launch.log" | cut -c1-220
else
  echo "FAIL: the verdict does not name the partition"; grep "^verdict:" "$tmp/launch.log"; fail=1
fi
exit $fail
