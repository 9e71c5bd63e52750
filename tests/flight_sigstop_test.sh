#!/usr/bin/env bash
# tierzero diagnose on a rank stopped from OUTSIDE the program (docs/formats.md,
# "Reading a verdict"): a 4-rank zero3 run (node=2,world=2, --comm-timeout 5),
# one rank chosen at random sent SIGSTOP at a random moment (in compute or
# inside a collective, whichever it is in), alternately under a bare mpirun
# and under tierzero launch. The others time out, and Open MPI's kill
# sequence (SIGCONT, then SIGTERM) wakes the stopped rank, which may catch up
# before it dumps. Every trial: the verdict's first words name the stopped
# rank, and the JSON's suspect is that rank (stopped, with a pause as long as
# the stop); where the kill sequence ended the rank before it wrote a dump (a
# loaded machine), the verdict names it first as the rank without one.
# Prints where each trial's rank was stopped.
# Usage: flight_sigstop_test.sh TIERZERO MPIRUN [TRIALS]
source "$(dirname "${BASH_SOURCE[0]}")/ckpt_lib.sh"
trials=${3:-10}
right=0 named=0

# The pid of world rank $2 among the processes of `tierzero train` writing to $1.
rank_pid() {
  local pid
  for pid in $(pgrep -f "^$tz train .*$1"); do
    tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && { echo "$pid"; return; }
  done
}

for t in $(seq "$trials"); do
  dir="$tmp/t$t"
  victim=$((RANDOM % 4))
  train=("$tz" train --model gpt-tiny --seq-len 32 --param-dtype fp32 --log-every 100000 --strategy zero3 --topology node=2,world=2
    --micro-batch 2 --steps 100000 --comm-timeout 5 --save-dir "$dir" --metrics "$dir.jsonl")
  if [ $((t % 2)) -eq 1 ]; then how="bare mpirun"; "$mpirun" --oversubscribe -np 4 "${train[@]}" > "$dir.log" 2>&1 &
  else how="tierzero launch"; "$tz" launch --max-restarts 0 --backoff 0 -- "$mpirun" --oversubscribe -np 4 "${train[@]}" > "$dir.log" 2>&1 & fi
  job=$!
  steps=$((2 + RANDOM % 4))
  for _ in $(seq 600); do [ "$( (wc -l < "$dir.jsonl") 2>/dev/null || echo 0)" -ge $steps ] && break; sleep 0.05; done
  sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
  pid=$(rank_pid "$dir" $victim)
  [ -n "$pid" ] || { bad "trial $t: no pid for rank $victim"; kill $job; wait $job; continue; }
  kill -STOP "$pid"
  for _ in $(seq 600); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
  if kill -0 $job 2>/dev/null; then bad "trial $t: the job did not end within 60 s of the stop"; kill -CONT "$pid"; kill -9 $job; fi
  wait $job
  "$tz" diagnose "$dir" --json > "$dir.json" 2>/dev/null
  line=$("$tz" diagnose "$dir" 2>/dev/null | grep "^verdict:")
  where=$(python3 - "$dir.json" "$dir/flight/rank-$victim.json" <<'PY' 2>/dev/null
import json, sys
v, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
s = v.get("suspect") or {}
if s.get("how") != "paused": print("unknown"); sys.exit()
stop = d["time_ns"] - s["stopped_s_before_dump"] * 1e9
inside = any(r["started_ns"] <= stop and (r["completed_ns"] == 0 or r["completed_ns"] > stop) for r in d["records"])
print("inside a collective" if inside else "in compute")
PY
)
  first=0
  grep -q "^verdict: rank $victim " <<<"$line" && first=1 && named=$((named + 1))
  # With its dump, the stopped rank is the suspect, paused as long as it was stopped. Open MPI's kill sequence can
  # end it before it writes one (SIGKILL after SIGTERM, on a loaded machine): then the verdict names it first as the
  # rank without a dump that the others wait for.
  if [ -f "$dir/flight/rank-$victim.json" ]; then
    evidence="import json,sys; s=json.load(open('$dir.json'))['suspect']; assert s['rank']==$victim and s['how']=='paused' and s['paused_s']>=3, s"
  else
    where="no dump: killed before it wrote one"
    evidence="import sys; sys.exit(0 if 'rank $victim has no usable dump' in sys.argv[1] else 1)"
  fi
  if [ $first -eq 1 ] && python3 -c "$evidence" "$line" 2>/dev/null &&
     { [ "$how" = "bare mpirun" ] || grep -q "^verdict: rank $victim " "$dir.log"; }; then
    right=$((right + 1))
    say "ok: trial $t ($how): rank $victim stopped $where after $steps+ steps is named: $(cut -c1-160 <<<"$line")"
  else
    bad "trial $t ($how): rank $victim stopped ($where) after $steps+ steps: $line"
  fi
  rm -rf "$dir"
done
say "the verdict named the stopped rank first in $named of $trials trials; as the suspect, stopped, in $right"
exit $fail
