#!/usr/bin/env bash
# How often a SIGTERM to a bare Open MPI mpirun ends in a checkpoint: gpt-tiny
# on 4 ranks, stopped TRIALS times each way, after WAIT seconds of training:
#   once    kill -TERM mpirun (systemd, PBS, a container whose command is mpirun)
#   twice   kill -TERM mpirun twice, 0.1 s apart (mpirun then exits at once)
#   timeout timeout -s TERM WAIT mpirun ... (GNU timeout signals mpirun and
#           then its own process group: one SIGTERM or two, as they coalesce)
# Once: the sequence's SIGTERM is the ranks' notice; twice: mpirun exits and
# the ranks save when they find it gone (tools/tierzero/preemption.h). A trial counts as saved when, once every
# rank has ended, `ckpt verify` passes. One JSON line per way, with how many
# had the checkpoint already when mpirun exited. Not a test (the timing is
# the machine's); tests/preemption_test.sh runs "once" and "twice".
#   TRIALS=10 WAIT=1.5 bench/mpirun_sigterm.sh [TIERZERO]
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tz=$(realpath "${1:-$root/build/tierzero}")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 OPENBLAS_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wait_s=${WAIT:-1.5}
train=("$tz" train --model gpt-tiny --seq-len 32 --micro-batch 2 --steps 100000 --strategy zero3 --topology node=2,world=2
       --log-every 100000 --save-dir "$work/ckpt" --save-every 100000)
for way in once twice timeout; do
  saved=0 at_exit=0
  for ((i = 0; i < ${TRIALS:-10}; ++i)); do
    rm -rf "$work/ckpt"
    if [ "$way" = timeout ]; then
      timeout -s TERM "$wait_s" mpirun -np 4 "${train[@]}" > "$work/log" 2>&1
    else
      mpirun -np 4 "${train[@]}" > "$work/log" 2>&1 &
      pid=$!
      sleep "$wait_s"
      kill -TERM $pid
      [ "$way" = twice ] && sleep 0.1 && kill -TERM $pid
      wait $pid
    fi
    [ -f "$work/ckpt/latest" ] && at_exit=$((at_exit + 1))
    for _ in $(seq 200); do pgrep -f "$tz train .*$work/ckpt" > /dev/null || break; sleep 0.1; done
    "$tz" ckpt verify "$work/ckpt" > /dev/null 2>&1 && saved=$((saved + 1))
  done
  echo "{\"bench\":\"mpirun_sigterm\",\"way\":\"$way\",\"trials\":${TRIALS:-10},\"saved\":$saved,\"saved_when_mpirun_exited\":$at_exit}"
done
