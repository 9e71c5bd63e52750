#!/usr/bin/env bash
# scripts/gpu_check.sh --bundle on a stub bundle whose programs fail, hang
# and succeed: every step runs under its own limit and is recorded, a
# failing or hanging step does not stop the next ones, the table always
# prints, the JSON is written to $OUT, and the exit status says a step failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/stage/bin" "$tmp/stage/lib" "$tmp/stage/data" "$tmp/bundle"
# The bundle's loader, stubbed: drops --library-path DIR [--list] and runs the program.
cat > "$tmp/stage/lib/ld-linux-x86-64.so.2" <<'SH'
#!/bin/sh
shift 2
[ "$1" = --list ] && { echo "libstub.so => /stub/libstub.so"; exit 0; }
exec "$@"
SH
printf '#!/bin/sh\necho "[  FAILED  ] GpuOps.LayersMatchTheCpu"; exit 1\n' > "$tmp/stage/bin/gpu_tests"
printf '#!/bin/sh\nsleep 600\n' > "$tmp/stage/bin/tierzero_gpu_bench"
printf '#!/bin/sh\necho "stub tierzero $*"; exit 0\n' > "$tmp/stage/bin/tierzero"
chmod +x "$tmp/stage/lib/ld-linux-x86-64.so.2" "$tmp/stage/bin/"*
tar -C "$tmp/stage" -cJf "$tmp/bundle/tierzero-gpu.tar.xz" .
start=$(date +%s)
out=$(OUT="$tmp/out" TZ_CHECK_LIMIT_S=3 PATH="/usr/bin:/bin" bash "$root/scripts/gpu_check.sh" --bundle "$tmp/bundle" 2>&1)
rc=$?
took=$(($(date +%s) - start))
fail=0
check() { grep -q -- "$1" <<<"$out" || { echo "FAIL: no '$1' in the output"; fail=1; }; }
[ $rc -ne 0 ] || { echo "FAIL: exit status 0 with a failing and a hanging step"; fail=1; }
check "| gpu_tests | fail (exit 1) |"
check "| bench | timeout |"
check "| train | pass |"   # after the failure and the hang
check "| export | pass |"
check "| multi_gpu | skip"
check "| step | result | seconds |"
[ -f "$tmp/out/gpu_check.json" ] || { echo "FAIL: no \$OUT/gpu_check.json"; fail=1; }
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert [s["step"] for s in d["steps"]] == ["devices", "gpu_tests", "multi_gpu", "bench", "train", "export", "llama", "pytorch", "hf"], d' \
  "$tmp/out/gpu_check.json" || fail=1
[ "$took" -lt 60 ] || { echo "FAIL: took $took s: a step was not cut at its limit"; fail=1; }
[ $fail -eq 0 ] && echo "ok: gpu_check.sh runs every step under its limit and always prints the table ($took s)"
[ $fail -eq 0 ] || echo "$out"
[ -n "${VERBOSE:-}" ] && echo "$out"
exit $fail
