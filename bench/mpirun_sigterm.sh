#!/usr/bin/env bash
# How often a SIGTERM to a bare Open MPI mpirun still ends in a checkpoint:
# gpt-tiny on 4 ranks, `timeout -s TERM 1.5 mpirun ... tierzero train`
# (mpirun passes it on as SIGCONT, SIGTERM, SIGKILL, odls_base_sigkill_timeout
# apart), TRIALS times for each timeout in WINDOWS; one JSON line per
# window with the runs that saved a checkpoint that `ckpt verify` passes.
# Not a test: the outcome is Open MPI's, and varies from run to run
# (docs/formats.md, "Stopping a run"). tierzero launch is the reliable path.
#   TRIALS=8 WINDOWS="1 3" bench/mpirun_sigterm.sh [TIERZERO]
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tz=$(realpath "${1:-$root/build/tierzero}")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 OPENBLAS_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for window in ${WINDOWS:-1 3}; do
  saved=0
  for ((i = 0; i < ${TRIALS:-8}; ++i)); do
    rm -rf "$work/ckpt"
    OMPI_MCA_odls_base_sigkill_timeout=$window timeout -s TERM 1.5 mpirun -np 4 "$tz" train --model gpt-tiny --seq-len 32 \
      --micro-batch 2 --steps 3000 --strategy zero3 --topology node=2,world=2 --log-every 100000 --save-dir "$work/ckpt" \
      --save-every 100000 > "$work/log" 2>&1 &
    wait $!
    "$tz" ckpt verify "$work/ckpt" > /dev/null 2>&1 && saved=$((saved + 1))
  done
  echo "{\"bench\":\"mpirun_sigterm\",\"odls_base_sigkill_timeout\":$window,\"trials\":${TRIALS:-8},\"saved\":$saved}"
done
