#!/usr/bin/env bash
# The soak test: an 8-rank training under `tierzero launch` while a random
# rank is SIGKILLed at a random time, FAULTS times in a row; the run must
# reach its last step with every step's loss and the final weights
# bit-identical to an uninterrupted run's (the data position and RNG come
# back from each checkpoint). Prints the faults survived and the steps
# recomputed; exit 0 only when all of that holds.
#   FAULTS=10 STEPS=4000 SAVE_EVERY=50 scripts/soak.sh [TIERZERO]   (the long version, the defaults)
#   ctest -R soak                                                   (3 faults, 1200 steps)
#   SOAK_RUN="srun -n 8 -O --mpi=pmix --kill-on-bad-exit=1" scripts/soak.sh   (under Slurm: tests/slurm_test.sh)
# SOAK_RUN starts the 8 ranks (default: mpirun -np 8); as root the usual
# Open MPI variables are set here.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tz=$(realpath "${1:-$root/build/tierzero}")
faults=${FAULTS:-10} steps=${STEPS:-4000} every=${SAVE_EVERY:-50}
read -r -a run <<< "${SOAK_RUN:-mpirun -np 8}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 OPENBLAS_NUM_THREADS=1
work=$(mktemp -d)
trap 'pkill -9 -f "$work/soak" 2>/dev/null; rm -rf "$work"' EXIT
args=(--model gpt-tiny --seq-len 32 --param-dtype fp32 --log-every 100000 --strategy zero3 --topology node=4,world=2
      --steps "$steps" --micro-batch 2)
"${run[@]}" "$tz" train "${args[@]}" --save-dir "$work/ref" --save-every "$steps" --metrics "$work/ref.jsonl" 2>"$work/ref.log" ||
  { cat "$work/ref.log"; echo "soak: the uninterrupted run failed"; exit 1; }
"$tz" launch --max-restarts $((faults + 2)) --backoff 0 -- "${run[@]}" "$tz" train "${args[@]}" --save-dir "$work/soak" \
  --save-every "$every" --metrics "$work/soak.jsonl" > "$work/launch.log" 2>&1 &
launcher=$!
lines() { [ -f "$work/soak.jsonl" ] && wc -l < "$work/soak.jsonl" || echo 0; }
survived=0 recomputed=0
for ((i = 1; i <= faults; ++i)); do
  # Wait for a running attempt: 8 rank processes and a step more than at the last fault.
  before=$(lines) ranks=()
  for _ in $(seq 600); do
    kill -0 $launcher 2>/dev/null || break 2
    mapfile -t ranks < <(pgrep -f "^$tz train .*$work/soak")
    [ ${#ranks[@]} -eq 8 ] && [ "$(lines)" -gt "$before" ] && break
    sleep 0.05
  done
  [ ${#ranks[@]} -eq 8 ] || break
  sleep "0.$((RANDOM % 8 + 1))"
  victim=${ranks[$((RANDOM % 8))]}
  done_steps=$(lines)
  kill -9 "$victim" 2>/dev/null || break
  while kill -0 "$victim" 2>/dev/null; do sleep 0.05; done
  saved=$(sed -n 's/^step-0*\([0-9][0-9]*\)$/\1/p' "$work/soak/latest" 2>/dev/null)
  ahead=$((done_steps - ${saved:-0}))  # negative when a save landed between counting the rows and the kill
  recomputed=$((recomputed + (ahead > 0 ? ahead : 0)))
  survived=$((survived + 1))
  echo "soak: fault $i: SIGKILL to rank process $victim after step $((done_steps - 1)); latest checkpoint: step ${saved:-none}"
done
wait $launcher
rc=$?
fail=0
[ $rc -eq 0 ] || { tail -n 20 "$work/launch.log"; echo "soak: FAIL: the launched run ended with $rc"; fail=1; }
python3 - "$work/ref.jsonl" "$work/soak.jsonl" "$steps" <<'PY' || fail=1
import json, sys
ref, soak = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
steps = int(sys.argv[3])
assert [r["step"] for r in soak] == list(range(1, steps + 1)), f"soak: FAIL: the metrics hold steps {soak[0]['step'] if soak else None}..{soak[-1]['step'] if soak else None}, {len(soak)} rows"
bad = [r["step"] for r, s in zip(ref, soak) if r["loss"] != s["loss"] or r["grad_norm"] != s["grad_norm"]]
assert not bad, f"soak: FAIL: losses differ from the uninterrupted run at steps {bad[:5]}"
PY
"$tz" ckpt export "$work/ref" --output "$work/ref.safetensors" 2>/dev/null &&
  "$tz" ckpt export "$work/soak" --output "$work/soak.safetensors" 2>/dev/null &&
  cmp -s "$work/ref.safetensors" "$work/soak.safetensors" || { echo "soak: FAIL: the final weights differ"; fail=1; }
[ "$survived" -eq "$faults" ] || { echo "soak: FAIL: $survived of $faults faults injected (the run ended first: give more STEPS)"; fail=1; }
echo "soak: $survived faults survived, $recomputed steps recomputed, $(grep -c 'tierzero launch: attempt .* of' "$work/launch.log") attempts;" \
  "$([ $fail -eq 0 ] && echo "every loss and the final weights bit-identical to the uninterrupted run" || echo FAILED)"
exit $fail
