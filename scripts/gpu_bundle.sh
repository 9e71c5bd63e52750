#!/usr/bin/env bash
# Builds what the GPU check runs, on a machine without a GPU, and packs it
# for a bare GPU machine (no compiler, apt, network, MPI or BLAS there):
#   scripts/gpu_bundle.sh [OUT]        (default build-gpu/bundle)
# OUT/tierzero-gpu.tar.xz holds bin/ (tierzero, gpu_tests with every GPU and
# NCCL test, tierzero_gpu_bench; CUDA architecture 90, Release, stripped),
# lib/ (every shared library they need that the GPU machine's image lacks,
# resolved with ldd), data/ (the built-in corpus) and MANIFEST (each file's
# origin, the libraries expected from the image and the newest GLIBC and
# GLIBCXX symbol versions the binaries need); OUT/README says how to run it.
# Only the NVIDIA driver, cuBLAS and NCCL come from the GPU machine.
# Fails when OUT is over 50 MiB. docs/gpu.md explains the choices.
# TZ_BUNDLE_BUILD=DIR packs from DIR, an existing build configured with
# -DTZ_WITH_CUDA=ON -DTZ_WITH_NCCL=ON -DTZ_CUDART_STATIC=ON (scripts/test.sh
# --all configures its build so, and the gpu_bundle test packs that one
# rather than compiling every source a second time), instead of build-gpu/.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out=${1:-$TZ_ROOT/build-gpu/bundle}
limit=$((50 * 1024 * 1024))
tz_install
command -v nvcc >/dev/null || { echo "gpu_bundle: nvcc not found (install the CUDA toolkit)"; exit 2; }
targets="tierzero_cli gpu_tests tierzero_gpu_bench"
if [ -n "${TZ_BUNDLE_BUILD:-}" ]; then
  build=$TZ_BUNDLE_BUILD
  for option in TZ_WITH_CUDA TZ_WITH_NCCL TZ_CUDART_STATIC; do
    grep -q "^$option:BOOL=ON$" "$build/CMakeCache.txt" 2>/dev/null ||
      { echo "gpu_bundle: TZ_BUNDLE_BUILD=$build is not a build configured with -D$option=ON"; exit 2; }
  done
  TZ_BUILD="$build" TZ_TARGETS="$targets" tz_build
else
  build="$TZ_ROOT/build-gpu"
  TZ_BUILD="$build" TZ_TARGETS="$targets" tz_build -DCMAKE_BUILD_TYPE=Release \
    -DTZ_WITH_CUDA=ON -DTZ_WITH_NCCL=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DTZ_CUDART_STATIC=ON
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/data"
for b in "$build/tierzero" "$build/tests/gpu_tests" "$build/bench/tierzero_gpu_bench"; do
  strip --strip-unneeded -o "$stage/bin/$(basename "$b")" "$b"
done
cp "$TZ_ROOT/data/kjv.txt" "$stage/data/"
# From the image: only the NVIDIA driver, cuBLAS and NCCL (the CUDA runtime
# is linked statically). Everything else ldd names is carried, the C and C++
# runtimes and the loader included: the binaries run through the bundle's
# loader (scripts/bundle_env.sh), so the image's glibc may be older than
# this machine's (Open MPI's libevent needs GLIBC_2.36) or newer.
image='^(linux-vdso\.so|libcuda\.so|libcublas\.so|libcublasLt\.so|libnccl\.so)'
{
  echo "# tierzero GPU bundle, built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git -C "$TZ_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "# file <- origin"
} > "$stage/MANIFEST"
for b in "$stage"/bin/*; do echo "bin/$(basename "$b") <- $build"; done >> "$stage/MANIFEST"
declare -A expected=()
while read -r name arrow path _; do
  [ "$arrow" = "=>" ] || continue
  if [[ $name =~ $image ]]; then expected[$name]=1; continue; fi
  [ -f "$path" ] || { echo "gpu_bundle: $name is not found on this machine (ldd: $path)"; exit 1; }
  [ -e "$stage/lib/$name" ] && continue
  cp -L "$path" "$stage/lib/$name"
  echo "lib/$name <- $(readlink -f "$path")" >> "$stage/MANIFEST"
done < <(for b in "$stage"/bin/*; do ldd "$b"; done)
cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib/"
echo "lib/ld-linux-x86-64.so.2 <- $(readlink -f /lib64/ld-linux-x86-64.so.2)" >> "$stage/MANIFEST"
{
  echo "# from the image: ${!expected[*]}"
  glibc=$(objdump -T "$stage"/bin/* "$stage"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
  glibcxx=$(objdump -T "$stage"/bin/* "$stage"/lib/* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -n 1)
  echo "needs $glibc $glibcxx"
} >> "$stage/MANIFEST"
rm -rf "$out"
mkdir -p "$out"
tar -C "$stage" -cf - . | xz -T0 -6 > "$out/tierzero-gpu.tar.xz"
cat > "$out/README" <<TXT
tierzero GPU bundle: run   scripts/gpu_check.sh --bundle $out --out DIR   on the GPU machine
(from a tierzero checkout; it unpacks tierzero-gpu.tar.xz and needs no compiler,
apt, network or MPI). Contents: tar -tJf tierzero-gpu.tar.xz; origins: its MANIFEST.
TXT
size=$(du -sb "$out" | cut -f1)
echo "gpu_bundle: wrote $out ($((size / 1024 / 1024)) MiB packed; $(du -sb "$stage" | cut -f1 | awk '{printf "%d", $1 / 1048576}') MiB unpacked)"
[ "$size" -le "$limit" ] || { echo "gpu_bundle: $out is $size bytes, over the 50 MiB limit"; exit 1; }
