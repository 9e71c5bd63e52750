#!/usr/bin/env bash
# The GPU bundle (scripts/gpu_bundle.sh) needs nothing of this machine but
# the NVIDIA libraries: built here, its size checked, then its CPU-side
# pieces run with an empty environment and LD paths only at the bundle,
# inside a mount namespace where Open MPI, OpenBLAS, PCRE2 and the other
# libraries tierzero links are hidden: tierzero --version, a 2-step CPU
# training through the sharded engine (a world of one, no mpirun), the GPU
# test binary's skip path; and every library each program loads resolves
# into the bundle or to the GPU machine's set (libcuda, libcublas, libcublasLt,
# libnccl). Skipped (77) without the CUDA toolkit, or without root (namespaces).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
command -v nvcc >/dev/null || { echo "skip: no nvcc"; exit 77; }
[ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null || { echo "skip: needs root and unshare"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The build running this test, when it is a CUDA build with the runtime static (scripts/test.sh --all's): packed
# as it is; otherwise the bundle's own build (build-gpu/).
build=${1:-}
if [ -n "$build" ] && grep -q "^TZ_CUDART_STATIC:BOOL=ON$" "$build/CMakeCache.txt" 2>/dev/null &&
  grep -q "^TZ_WITH_NCCL:BOOL=ON$" "$build/CMakeCache.txt"; then
  export TZ_BUNDLE_BUILD=$build
fi
"$root/scripts/gpu_bundle.sh" "$tmp/bundle" > "$tmp/build.log" 2>&1 || { tail -n 30 "$tmp/build.log"; echo "FAIL: gpu_bundle.sh"; exit 1; }
fail=0
size=$(du -sb "$tmp/bundle" | cut -f1)
[ "$size" -le $((50 * 1024 * 1024)) ] || { echo "FAIL: the bundle is $size bytes, over 50 MiB"; fail=1; }
echo "bundle: $((size / 1024)) KiB"
# What to hide: the folders and files of every library tierzero links on this
# machine (the real files; their symbolic links then lead nowhere). PCRE2 is
# hidden last: mount itself needs it.
hidden_dirs=(/usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/openblas-pthread)
declare -A seen=()
hidden_files=()
for pattern in libmpi libopen-pal libopen-rte libopenblas libdnnl libgomp libOpenCL libfmt libtomlplusplus libhwloc libevent libgfortran libquadmath libz.so libudev libpcre2-8; do
  for f in /usr/lib/x86_64-linux-gnu/"$pattern"*; do
    real=$(readlink -f "$f")
    [ -f "$real" ] && [ -z "${seen[$real]:-}" ] || continue
    case $real in /usr/lib/x86_64-linux-gnu/openmpi/* | /usr/lib/x86_64-linux-gnu/openblas-pthread/*) continue ;; esac
    seen[$real]=1 hidden_files+=("$real")
  done
done
mkdir -p "$tmp/empty"
# Unpacked before anything is hidden (tar and xz need some of it).
( source "$root/scripts/bundle_env.sh" && tz_bundle_open "$tmp/bundle" "$tmp/run" ) || { echo "FAIL: the bundle does not unpack"; exit 1; }
cat > "$tmp/inside.sh" <<SH
set -u
mount --make-rprivate /
for d in ${hidden_dirs[*]}; do mount --bind "$tmp/empty" "\$d" || exit 1; done
for f in ${hidden_files[*]}; do mount --bind /dev/null "\$f" || exit 1; done
exec env -i PATH=/usr/bin:/bin HOME="$tmp" TMPDIR="$tmp" bash "$tmp/checks.sh"
SH
# Only bash, mawk and the bundle's programs run once the libraries are hidden.
cat > "$tmp/checks.sh" <<SH
set -u
source "$root/scripts/bundle_env.sh"
TZ_BUNDLE="$tmp/run" TZ_LIBPATH="$tmp/run/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib" TZ_DATA_DIR="$tmp/run/data"
export TZ_BUNDLE TZ_LIBPATH TZ_DATA_DIR
fail=0
[ -e /usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so ] && { echo "FAIL: Open MPI is still visible"; fail=1; }
v=\$(tz_run tierzero --version) && [ "\$v" = "tierzero 0.1.0" ] || { echo "FAIL: tierzero --version: \$v"; fail=1; }
tz_run tierzero train --model gpt-tiny --steps 2 --strategy zero3 --metrics "$tmp/m.jsonl" > "$tmp/train.log" 2>&1 \
  || { echo "FAIL: a 2-step CPU training: \$(< "$tmp/train.log")"; fail=1; }
m=\$(< "$tmp/m.jsonl")
[[ \$m == *'"step":1'*'"step":2'* ]] || { echo "FAIL: the training's metrics lack its two steps: \$m"; fail=1; }
tz_run gpu_tests > "$tmp/tests.log" 2>&1 || { echo "FAIL: the GPU test binary without a GPU"; fail=1; }
t=\$(< "$tmp/tests.log")
[[ \$t == *"no GPU here"* && \$t == *"PASSED"* ]] || { echo "FAIL: the GPU tests did not take their skip path: \$t"; fail=1; }
for p in tierzero gpu_tests tierzero_gpu_bench; do
  libs=\$(tz_bundle_libs "\$p") || { echo "FAIL: \$p: the loader could not list its libraries: \$libs"; fail=1; }
  while read -r name arrow path; do
    case \$path in
      "\$TZ_BUNDLE"/lib/*) ;;
      */libcuda.so* | */libcublas.so* | */libcublasLt.so* | */libnccl.so*) ;;
      *) echo "FAIL: \$p loads \$name from '\$path', neither the bundle nor the GPU machine's NVIDIA libraries"; fail=1 ;;
    esac
  done <<< "\$libs"
done
exit \$fail
SH
unshare -m bash "$tmp/inside.sh" || fail=1
[ $fail -eq 0 ] && echo "ok: the GPU bundle runs alone (tierzero --version, a CPU training without mpirun, the GPU tests' skip path)"
exit $fail
