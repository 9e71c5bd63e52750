# Running the GPU bundle (scripts/gpu_bundle.sh) on a machine that has
# nothing of tierzero's: sourced by scripts/gpu_check.sh and
# tests/gpu_bundle_test.sh, not run. Defines
#   tz_bundle_open DIR [RUN]   unpack DIR/tierzero-gpu.tar.xz into RUN (default
#                              a new temporary folder); sets TZ_BUNDLE to it and
#                              TZ_LIBPATH to the folders below
#   tz_run PROGRAM ARGS...     runs bin/PROGRAM through the bundle's own loader
#                              (its glibc and libstdc++, whatever the image has)
#   tz_bundle_libs PROGRAM     prints "name => path" for every library PROGRAM
#                              links, as the bundle's loader resolves them
#   tz_find_lib NAME           where the bundle's loader finds NAME (a library
#                              loaded at run time: libcuda.so.1 by the static
#                              CUDA runtime, libnvidia-ml.so.1 by NCCL), or
#                              "NAME not found"; exit status 1 when not found
# The loader's --library-path replaces LD_LIBRARY_PATH for the whole process
# (start-up and every later dlopen alike), so TZ_LIBPATH must hold everything
# the image would find through it, in this order: the bundle's lib/; the
# caller's LD_LIBRARY_PATH; NCCL (NCCL_HOME/NCCL_ROOT, else the nvidia-nccl
# wheel of the image's python3); cuBLAS (CUDA_HOME, /usr/local/cuda, else the
# nvidia-cublas wheel: CUDA 13's puts it under nvidia/cu13/lib, CUDA 12's
# under nvidia/cublas/lib); the driver's folders (TZ_NVIDIA_DIR, default
# /usr/local/nvidia: lib64 and lib, the GPU machine's read-only mount). The
# loader's cache (/etc/ld.so.cache) and default folders come after them.

tz_wheel_lib_dirs() {  # tz_wheel_lib_dirs FILE-GLOB...: folders of the image python3's nvidia.* wheels holding such a file
  command -v python3 >/dev/null || return 0
  python3 - "$@" 2>/dev/null <<'PY' || true
import glob, os, sys
try:
    import nvidia
except ImportError:
    sys.exit(0)
found = []
for root in getattr(nvidia, "__path__", []):
    for pattern in sys.argv[1:]:
        for f in sorted(glob.glob(os.path.join(root, "*", "lib", pattern))):
            if os.path.dirname(f) not in found:
                found.append(os.path.dirname(f))
print("\n".join(found))
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
  local paths=("$run/lib") d nvidia=${TZ_NVIDIA_DIR:-/usr/local/nvidia} caller=()
  IFS=: read -r -a caller <<< "${LD_LIBRARY_PATH:-}"
  for d in "${caller[@]}"; do [ -n "$d" ] && paths+=("$d"); done
  for d in "${NCCL_HOME:-}" "${NCCL_ROOT:-}"; do [ -n "$d" ] && paths+=("$d/lib"); done
  for d in ${CUDA_HOME:+"$CUDA_HOME/lib64"} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && paths+=("$d"); done
  while read -r d; do [ -n "$d" ] && paths+=("$d"); done < <(tz_wheel_lib_dirs 'libnccl.so*' 'libcublas.so*' 'libcublasLt.so*')
  for d in "$nvidia/lib64" "$nvidia/lib"; do [ -d "$d" ] && paths+=("$d"); done
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

tz_find_lib() {
  local name=$1 d hit dirs=()
  IFS=: read -r -a dirs <<< "$TZ_LIBPATH"
  for d in "${dirs[@]}"; do
    [ -e "$d/$name" ] && { echo "$name => $(readlink -f "$d/$name") (library path: $d)"; return 0; }
  done
  if command -v ldconfig >/dev/null; then
    hit=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n && /x86-64/ { print $NF; exit }')
    [ -n "$hit" ] && { echo "$name => $(readlink -f "$hit") (the loader's cache)"; return 0; }
  fi
  for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64; do
    [ -e "$d/$name" ] && { echo "$name => $(readlink -f "$d/$name") (default folder)"; return 0; }
  done
  echo "$name not found (searched $TZ_LIBPATH, the loader's cache and its default folders)"
  return 1
}
