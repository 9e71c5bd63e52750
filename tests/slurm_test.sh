#!/usr/bin/env bash
# tierzero under Slurm: a one-node cluster on this machine
# (scripts/slurm_local.sh: Debian's slurm-wlm and munge, the node declared
# with 2 CPUs, ranks overcommitted with -O), started here and stopped after.
#  1. srun --mpi=pmix trains exactly as mpirun does (every loss bit-identical).
#  2. scripts/train.sbatch under `sbatch --requeue --signal=B:USR1@59
#     --time=1`: the time-limit notice reaches the launcher, every rank saves
#     and exits 75, the launcher requeues the job; in the requeued job
#     `scancel --signal=TERM JOB` does the same from the ranks' side; the
#     third start finishes, every loss bit-identical to an uninterrupted run.
#  3. The soak test (scripts/soak.sh) with srun as the launcher's command.
# Slurm holds a requeued job for about two minutes before it may start
# again; once the node has cleaned up after it (idle, no slurmstepd left)
# the test moves its start time to now (scontrol update StartTime=now).
# Usage: slurm_test.sh TIERZERO
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tz=$(realpath "$1")
for c in munged slurmctld slurmd srun; do
  command -v $c >/dev/null || { bash -c "source '$root/scripts/common.sh' && tz_install munge slurmctld slurmd slurm-client" || exit 1; break; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 OPENBLAS_NUM_THREADS=1
work=$(mktemp -d)
cluster=$work/cluster
trap '"$root/scripts/slurm_local.sh" stop "$cluster"; rm -rf "$work"' EXIT
eval "$("$root/scripts/slurm_local.sh" start "$cluster")" || exit 1
fail=0
die() { echo "slurm: FAIL: $*"; fail=1; }

# The losses of two metrics files, compared row by row (python3, no packages).
same_losses() {  # same_losses A B STEPS
  python3 - "$@" <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
steps = int(sys.argv[3])
assert [r["step"] for r in b] == list(range(1, steps + 1)), f"{sys.argv[2]} holds {len(b)} rows, not steps 1..{steps}"
bad = [x["step"] for x, y in zip(a, b) if x["loss"] != y["loss"] or x["grad_norm"] != y["grad_norm"]]
assert not bad, f"losses differ at steps {bad[:5]}"
PY
}

# Waits up to $1 seconds for the command after it to succeed.
await() {
  local limit=$1
  shift
  for _ in $(seq $((limit * 2))); do "$@" && return 0; sleep 0.5; done
  return 1
}
job_field() { scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }  # job_field JOB KEY
restarts_are() { [ "$(job_field "$1" Restarts)" = "$2" ]; }
state_is() { [ "$(job_field "$1" JobState)" = "$2" ]; }
rows() { [ -f "$1" ] && wc -l < "$1" || echo 0; }
more_rows_than() { [ "$(rows "$1")" -gt "$2" ]; }
# Whether the node is idle and no step daemon of job $1 is left (each keeps a socket in the spool folder).
node_clear() { [ "$(sinfo -h -N -o %t)" = idle ] && ! compgen -G "$cluster/spool/*_$1.*" >/dev/null; }
# Starts requeued job $1 now instead of in two minutes, once its last run has been cleaned up.
start_now() { await 60 node_clear "$1" && scontrol update JobId="$1" StartTime=now "${@:2}"; }

args=(--model gpt-tiny --seq-len 32 --strategy zero3 --topology node=2,world=2 --log-every 100000)

# 1. srun = mpirun.
mpirun -np 4 "$tz" train "${args[@]}" --steps 200 --metrics "$work/mpirun.jsonl" 2>"$work/mpirun.log" || die "mpirun: $(tail -n 3 "$work/mpirun.log")"
srun -n 4 -O --mpi=pmix "$tz" train "${args[@]}" --steps 200 --metrics "$work/srun.jsonl" 2>"$work/srun.log" || die "srun: $(tail -n 3 "$work/srun.log")"
msg=$(same_losses "$work/mpirun.jsonl" "$work/srun.jsonl" 200 2>&1) && echo "slurm: srun --mpi=pmix: 200 steps, every loss bit-identical to mpirun's" ||
  die "srun against mpirun: ${msg##*AssertionError: }"

# 2. Preempted twice, requeued twice, resumed twice. The job's first start
#    waits before step 200 for its notice (TIERZERO_FAULT_HOLD; Slurm's
#    time-limit timer may send it any time in the first minute), the second
#    before step 1500 for the scancel, so neither can finish first (a fast
#    machine trains the 1800 steps in 9 s); the third does not wait.
steps=2000
srun -n 4 -O --mpi=pmix "$tz" train "${args[@]}" --steps $steps --metrics "$work/ref.jsonl" 2>"$work/ref.log" || die "the uninterrupted run: $(tail -n 3 "$work/ref.log")"
job=$(TIERZERO_FAULT_HOLD=200,1500 TIERZERO=$tz SRUN_ARGS=-O LAUNCH_ARGS="--max-restarts 0" sbatch --parsable -n 4 -O --time=1 --signal=B:USR1@59 -o "$work/job.out" \
  "$root/scripts/train.sbatch" "$work/ckpt" "${args[@]}" --steps $steps --save-every 1000 --metrics "$work/job.jsonl")
[ -n "$job" ] || die "sbatch did not take the job"
if await 120 restarts_are "$job" 1; then
  preempted=$(rows "$work/job.jsonl")
  echo "slurm: job $job: preempted by its time limit (USR1 to the batch shell) after $preempted steps and requeued"
  start_now "$job" TimeLimit=10
  await 60 state_is "$job" RUNNING && await 60 grep -q "resumed after step" "$work/job.out" || die "the requeued job did not resume"
  # Counted from the preemption, not from when the resume was seen: a fast machine trains up to the hold at step 1500
  # within one poll, and then no row follows until the scancel.
  await 60 more_rows_than "$work/job.jsonl" $((preempted + 100)) || die "the resumed job made no progress"
  scancel --signal=TERM "$job"
  if await 60 restarts_are "$job" 2; then
    echo "slurm: job $job: preempted by scancel --signal=TERM after $(rows "$work/job.jsonl") steps and requeued"
    start_now "$job"
  else
    die "scancel --signal=TERM did not requeue the job"
  fi
else
  die "the time limit's USR1 did not requeue the job (state $(job_field "$job" JobState))"
fi
await 240 state_is "$job" COMPLETED || die "the job did not complete (state $(job_field "$job" JobState))"
[ "$(grep -c 'tierzero launch: preempted: requeueing Slurm job' "$work/job.out")" -eq 2 ] || die "the launcher did not requeue twice"
[ "$(grep -c 'tierzero: resumed after step' "$work/job.out")" -eq 2 ] || die "the job did not resume twice"
msg=$(same_losses "$work/ref.jsonl" "$work/job.jsonl" $steps 2>&1) && echo "slurm: job $job completed after 2 requeues: every loss bit-identical to the uninterrupted run" ||
  die "the requeued job against the uninterrupted run: ${msg##*AssertionError: }"
[ $fail -eq 0 ] || { echo "--- job output"; grep -v '^step' "$work/job.out"; echo "--- slurmctld and slurmd on job $job";
                      grep -h -E "JobId=$job|job_?id[ =:]$job\b|StepId=$job|JOB $job|requeue|error" "$cluster/slurmctld.log" "$cluster/slurmd.log" | tail -n 40; }

# 3. The soak test under srun.
FAULTS=2 STEPS=1200 SAVE_EVERY=50 SOAK_RUN="srun -n 8 -O --mpi=pmix --kill-on-bad-exit=1" bash "$root/scripts/soak.sh" "$tz" || die "the soak test under srun"
[ $fail -eq 0 ] && echo "slurm: ok"
exit $fail
