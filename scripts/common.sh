# Shared by demo.sh and test.sh: install what is missing, configure, build.
# Sourced, not run. Re-running on a machine that has everything installs
# nothing and rebuilds only what changed.
set -euo pipefail
TZ_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TZ_BUILD=${TZ_BUILD:-$TZ_ROOT/build}
TZ_PACKAGES=(cmake ninja-build g++ pkg-config python3
  openmpi-bin libopenmpi-dev libopenblas-dev libdnnl-dev libgtest-dev
  nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libfmt-dev libhwloc-dev
  zlib1g-dev libpcre2-dev bible-kjv iproute2 procps curl ca-certificates xz-utils
  munge slurmctld slurmd slurm-client)

tz_install() {
  local missing=()
  for p in "${TZ_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "tierzero: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

tz_build() {
  if [ ! -f "$TZ_BUILD/build.ninja" ]; then
    # The CUDA code is built (not run) wherever the toolkit is installed.
    local cuda=OFF nccl=OFF
    if command -v nvcc >/dev/null 2>&1; then
      cuda=ON
      [ -f "$(dirname "$(command -v nvcc)")/../include/nccl.h" ] && nccl=ON
    fi
    cmake -S "$TZ_ROOT" -B "$TZ_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTZ_WITH_CUDA=$cuda -DTZ_WITH_NCCL=$nccl "$@"
  elif [ $# -gt 0 ]; then
    cmake -S "$TZ_ROOT" -B "$TZ_BUILD" "$@" >/dev/null  # the caller's options win over an older configuration
  fi
  # TZ_TARGETS: only these targets (scripts/gpu_bundle.sh); default everything.
  # shellcheck disable=SC2086
  cmake --build "$TZ_BUILD" -j "$(nproc)" ${TZ_TARGETS:+--target $TZ_TARGETS}
}

# Environment for multi-rank runs on this kind of machine (see docs/architecture.md).
tz_mpi_env() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1
  export MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184
  export OPENBLAS_NUM_THREADS=1
}
