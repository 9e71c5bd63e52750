#!/usr/bin/env bash
# NCCL laid out as the nvidia-nccl-cu13 wheel lays it out (a prefix with
# include/nccl.h and only the versioned lib/libnccl.so.2) is found through
# NCCL_ROOT (CMake variable) and NCCL_HOME (environment). Made from this
# machine's NCCL; skipped (77) without the CUDA toolkit and NCCL.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
command -v nvcc >/dev/null || { echo "skip: no nvcc"; exit 77; }
cuda=$(dirname "$(command -v nvcc)")/..
lib=$(ls "$cuda"/lib64/libnccl.so.2 "$cuda"/lib/libnccl.so.2 2>/dev/null | head -n 1)
[ -f "$cuda/include/nccl.h" ] && [ -n "$lib" ] || { echo "skip: no NCCL beside the CUDA toolkit"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/wheel/include" "$tmp/wheel/lib"
cp "$cuda/include/nccl.h" "$tmp/wheel/include/"
ln -s "$(readlink -f "$lib")" "$tmp/wheel/lib/libnccl.so.2"
fail=0
configure() {  # configure NAME [cmake args...]: prints the NCCL line of a fresh configuration
  local name=$1; shift
  cmake -S "$root" -B "$tmp/$name" -G Ninja -DTZ_WITH_CUDA=ON -DTZ_WITH_NCCL=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DTZ_BUILD_TESTS=OFF "$@" 2>&1 | grep -- "-- NCCL: "
}
want="-- NCCL: $tmp/wheel/include/nccl.h, $tmp/wheel/lib/libnccl.so.2"
got=$(configure root -DNCCL_ROOT="$tmp/wheel")
[ "$got" = "$want" ] || { echo "FAIL: NCCL_ROOT: '$got', expected '$want'"; fail=1; }
got=$(NCCL_HOME="$tmp/wheel" configure home)
[ "$got" = "$want" ] || { echo "FAIL: NCCL_HOME: '$got', expected '$want'"; fail=1; }
[ $fail -eq 0 ] && echo "ok: NCCL found in a wheel-shaped prefix through NCCL_ROOT and NCCL_HOME"
exit $fail
