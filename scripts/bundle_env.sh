# Running the GPU bundle (scripts/gpu_bundle.sh) on a machine that has
# nothing of tierzero's: sourced by scripts/gpu_check.sh and
# tests/gpu_bundle_test.sh, not run. Defines
#   tz_bundle_open DIR [RUN]   unpack DIR/tierzero-gpu.tar.xz into RUN (default
#                              a new temporary folder); sets TZ_BUNDLE to it and
#                              TZ_LIBPATH to its lib/ plus the folders of the
#                              GPU machine's NCCL and cuBLAS (found below)
#   tz_run PROGRAM ARGS...     runs bin/PROGRAM through the bundle's own loader
#                              (its glibc and libstdc++, whatever the image has)
#   tz_bundle_libs PROGRAM     prints "name => path" for every library PROGRAM
#                              loads, as the bundle's loader resolves them
# NCCL: NCCL_HOME/NCCL_ROOT, else the nvidia-nccl wheel of the image's
# python3; cuBLAS: CUDA_HOME, /usr/local/cuda, else the nvidia-cublas wheel;
# the driver (libcuda) through the image's loader cache.

tz_python_wheel_lib() {  # tz_python_wheel_lib MODULE: the lib/ of an nvidia.* wheel, if python3 has it
  command -v python3 >/dev/null || return 0
  python3 - "$1" 2>/dev/null <<'PY' || true
import importlib, os, sys
m = importlib.import_module(sys.argv[1])
for p in getattr(m, "__path__", []):
    if os.path.isdir(os.path.join(p, "lib")):
        print(os.path.join(p, "lib"))
        break
PY
}

tz_bundle_open() {
  local dir=$1 run=${2:-}
  [ -f "$dir/tierzero-gpu.tar.xz" ] || { echo "bundle: $dir/tierzero-gpu.tar.xz is missing (build it with scripts/gpu_bundle.sh)" >&2; return 2; }
  [ -n "$run" ] || run=$(mktemp -d "${TMPDIR:-/tmp}/tierzero-bundle.XXXXXX")
  mkdir -p "$run"
  if command -v xz >/dev/null; then
    xz -dc "$dir/tierzero-gpu.tar.xz" | tar -C "$run" -xf - || return 2
  else  # python3's tarfile reads xz itself
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$dir/tierzero-gpu.tar.xz" "$run" || return 2
  fi
  TZ_BUNDLE=$run
  local paths=("$run/lib") d
  for d in "${NCCL_HOME:-}" "${NCCL_ROOT:-}"; do [ -n "$d" ] && paths+=("$d/lib"); done
  d=$(tz_python_wheel_lib nvidia.nccl); [ -n "$d" ] && paths+=("$d")
  for d in ${CUDA_HOME:+"$CUDA_HOME/lib64"} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && paths+=("$d"); done
  d=$(tz_python_wheel_lib nvidia.cublas); [ -n "$d" ] && paths+=("$d")
  local unique=() p
  for p in "${paths[@]}"; do [[ " ${unique[*]} " == *" $p "* ]] || unique+=("$p"); done
  TZ_LIBPATH=$(IFS=:; echo "${unique[*]}")
  export TZ_BUNDLE TZ_LIBPATH TZ_DATA_DIR="$run/data"
}

tz_run() {
  local program=$1
  shift
  "$TZ_BUNDLE/lib/ld-linux-x86-64.so.2" --library-path "$TZ_LIBPATH" "$TZ_BUNDLE/bin/$program" "$@"
}

tz_bundle_libs() {
  "$TZ_BUNDLE/lib/ld-linux-x86-64.so.2" --library-path "$TZ_LIBPATH" --list "$TZ_BUNDLE/bin/$1" |
    awk '$2 == "=>" { print $1, "=>", $3 } $2 != "=>" && $1 ~ /^\// { print $1, "=>", $1 }'
}
