#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: gpt-tiny trained
# with the hier3 strategy on 8 ranks (2 nodes x 2 packages x 2 ranks) on the
# built-in corpus, then the same layout's collectives measured side by side.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tz_install
tz_build
tz_mpi_env
out="$TZ_BUILD/demo"
mkdir -p "$out"
mpirun -np 8 "$TZ_BUILD/tierzero" train --strategy hier3 --topology package=2,node=2,world=2 \
  --model gpt-tiny --data builtin --steps "${TZ_DEMO_STEPS:-1500}" --micro-batch 4 --lr 0.003 --warmup 50 \
  --log-every 100 --metrics "$out/metrics.jsonl"
mpirun -np 8 "$TZ_BUILD/tierzero" bench comm --topology package=2,node=2,world=2 --sizes 1048576,4194304 \
  --write-system "$out/measured-system.toml"
echo "demo: metrics in $out/metrics.jsonl, measured system in $out/measured-system.toml"
