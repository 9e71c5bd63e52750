#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on 8 ranks:
# flat vs hierarchical collectives on a 2x2x2 layout, then writes the
# measured system file to build/measured-system.toml.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tz_install
tz_build
tz_mpi_env
mpirun -np 8 "$TZ_BUILD/tierzero" bench comm --topology gpu=2,node=2,world=2 \
  --write-system "$TZ_BUILD/measured-system.toml"
