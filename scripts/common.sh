# Shared by demo.sh and test.sh: install what is missing, configure, build.
# Sourced, not run. Re-running on a machine that has everything installs
# nothing and rebuilds only what changed.
set -euo pipefail
TZ_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TZ_BUILD=${TZ_BUILD:-$TZ_ROOT/build}
TZ_PACKAGES=(cmake ninja-build g++ pkg-config python3
  openmpi-bin libopenmpi-dev libopenblas-dev libdnnl-dev libgtest-dev
  nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libfmt-dev libhwloc-dev
  zlib1g-dev libpcre2-dev iproute2 procps curl ca-certificates xz-utils
  libprotobuf-dev protobuf-compiler libisal-dev)

# tz_install [PACKAGE...]: installs what is missing of TZ_PACKAGES and the
# packages given (a slow suite's own: Slurm, clang), then the npm packages
# of web/ (scripts/web_deps.sh: the chart library of the HTML pages).
tz_install() {
  local missing=()
  for p in "${TZ_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "tierzero: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  "$TZ_ROOT/scripts/web_deps.sh"
}

# The CMake options that add the CUDA build (and NCCL where its header is
# found) where nvcc is installed; none elsewhere. A CPU build is the
# default; scripts/test.sh --all (CI) builds the GPU code too. NCCL is
# looked for where src/CMakeLists.txt looks: NCCL_ROOT or NCCL_HOME, beside
# the toolkit (nvcc's real folder, so a linked nvcc counts), or the system's
# include folders (NVIDIA's libnccl-dev puts it in /usr/include). A build
# without NCCL here made the gpu_bundle test compile every source again.
tz_gpu_options() {
  command -v nvcc >/dev/null 2>&1 || return 0
  local nccl=OFF toolkit dir
  toolkit=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  for dir in ${NCCL_ROOT:+"$NCCL_ROOT/include"} ${NCCL_HOME:+"$NCCL_HOME/include"} "$toolkit/include" \
    "$toolkit/targets/x86_64-linux/include" /usr/local/cuda/include /usr/include /usr/local/include; do
    [ -f "$dir/nccl.h" ] && nccl=ON && break
  done
  # The CUDA runtime static and Hopper's code only, as the GPU bundle needs them (scripts/gpu_bundle.sh packs this
  # build then; a plain CMake configure builds Ampere's too).
  echo "-DTZ_WITH_CUDA=ON -DTZ_WITH_NCCL=$nccl -DTZ_CUDART_STATIC=ON -DCMAKE_CUDA_ARCHITECTURES=90"
}

# tz_build [CMAKE OPTIONS...]: configures (once, or again with the options
# given) and builds. Optimised, with line tables only (-g1: file and line in
# backtraces and profiles; full -g took a third longer to compile here).
tz_build() {
  if [ ! -f "$TZ_BUILD/build.ninja" ]; then
    cmake -S "$TZ_ROOT" -B "$TZ_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "$@"
  elif [ $# -gt 0 ]; then
    cmake -S "$TZ_ROOT" -B "$TZ_BUILD" "$@" >/dev/null  # the caller's options win over an older configuration
  fi
  # TZ_TARGETS: only these targets (scripts/gpu_bundle.sh); default everything.
  # shellcheck disable=SC2086
  cmake --build "$TZ_BUILD" -j "$(nproc)" ${TZ_TARGETS:+--target $TZ_TARGETS}
}

# tz_phase NAME: a progress line naming the phase that starts, with the
# time the previous one took and the time since the script started.
tz_phase() {
  local now
  now=$(date +%s)
  if [ -n "${TZ_PHASE_NAME:-}" ]; then
    echo "tierzero: $TZ_PHASE_NAME took $((now - TZ_PHASE_START)) s (total $((now - TZ_SCRIPT_START)) s)"
  fi
  TZ_PHASE_NAME=$1 TZ_PHASE_START=$now
  [ "$1" = done ] || echo "tierzero: $1 ..."
}
TZ_SCRIPT_START=$(date +%s)

# tz_slowest_tests BUILD N: the N slowest tests of the last ctest run there.
tz_slowest_tests() {
  local log=$1/Testing/Temporary/LastTest.log
  [ -f "$log" ] || return 0
  echo "tierzero: the $2 slowest tests:"
  # sed, not head: head would stop reading and fail the pipeline (pipefail) with SIGPIPE
  awk '/^[0-9]+\/[0-9]+ Test: / { name = $3 } /^Test time = / { printf "%9.2f s  %s\n", $4, name }' "$log" | sort -rn | sed -n "1,$2p"
}

# Environment for multi-rank runs on this kind of machine (see docs/architecture.md).
tz_mpi_env() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1
  export MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184
  export OPENBLAS_NUM_THREADS=1
}
