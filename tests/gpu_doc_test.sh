#!/usr/bin/env bash
# docs/gpu.md's list of kernels names every __global__ function under
# src/gpu and no other, so the page cannot drift from the code.
# Usage: gpu_doc_test.sh SOURCE_ROOT
set -u
root=$1
code=$(grep -ho '__global__ void [a-z0-9_]*' "$root"/src/gpu/*.cu "$root"/src/gpu/nccl/*.cu 2> /dev/null | awk '{print $3}' | sort -u)
doc=$(grep -o '`[a-z0-9_]*_kernel`' "$root/docs/gpu.md" | tr -d '`' | sort -u)
[ -n "$code" ] || { echo "FAIL: no kernels found under $root/src/gpu"; exit 1; }
if [ "$code" != "$doc" ]; then
  echo "FAIL: docs/gpu.md's kernels differ from src/gpu's"
  diff <(echo "$code") <(echo "$doc") | sed 's/^</  in src\/gpu only:/; s/^>/  in docs\/gpu.md only:/'
  exit 1
fi
echo "ok: docs/gpu.md names the $(wc -l <<<"$code") kernels of src/gpu"
