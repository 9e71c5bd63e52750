#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit and multi-rank).
# Extra arguments go to ctest (e.g. -L mpi, -R hierarchy).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tz_install
tz_build
tz_mpi_env
cd "$TZ_BUILD"
ctest --output-on-failure -j "$(nproc)" "$@"
