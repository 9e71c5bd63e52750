#!/usr/bin/env bash
# The layers of docs/architecture.md, checked on the sources: every file
# under src/ includes only headers of its own layer or of layers below it
# (a public header belongs to the layer that implements it), and that
# docs/architecture.md names exactly the folders of src/. Prints each
# upward include and fails when there is one. Usage: layers_test.sh SRC INCLUDE
set -u
src=$1
inc=$2
# Layers, bottom first; a directory of src/ is in the layer of its first path part.
layers=(core topo quant gpu comm data model run plan backend ckpt zero sim)
declare -A rank
for i in "${!layers[@]}"; do rank[${layers[$i]}]=$i; done
# Public headers and the layer that implements each.
declare -A owner=(
  [error.h]=core [dtype.h]=core [memory.h]=core [read_file.h]=core
  [topology.h]=topo [system.h]=topo [hops.h]=topo
  [quant.h]=quant [element_ops.h]=quant
  [communicator.h]=comm [traffic.h]=comm [comm_schedule.h]=comm [order_check.h]=comm [hierarchy.h]=comm [mpi.h]=comm [nccl.h]=comm
  [data.h]=data [tokenizer.h]=data
  [gpt_config.h]=model [gpt.h]=model [optim.h]=model [backend.h]=model
  [train_config.h]=run [trainer.h]=run [generate.h]=run
  [plan.h]=plan [shard_layout.h]=plan [deepspeed_config.h]=plan
  [checkpoint.h]=ckpt [safetensors.h]=ckpt [hf_gpt2.h]=ckpt
  [engine.h]=zero
  [sim.h]=sim [planner.h]=sim [traffic_model.h]=sim
  [gpu.h]=gpu [gpu_ops.h]=gpu [gpu_backend.h]=backend [gpu_model.h]=backend
)
fail=0
for h in "$inc"/tierzero/*.h; do
  [ -n "${owner[$(basename "$h")]:-}" ] || { echo "FAIL: $(basename "$h") has no layer in $0"; fail=1; }
done
check() {  # check FILE LAYER
  local file=$1 layer=$2 line header theirs
  while IFS= read -r line; do
    header=${line#*\"}; header=${header%\"*}
    case $header in
      tierzero/*) theirs=${owner[${header#tierzero/}]:-} ;;
      */*) theirs=${header%%/*} ;;
      *) continue ;;
    esac
    [ -n "$theirs" ] || { echo "FAIL: $file includes $header, which has no layer"; fail=1; continue; }
    if [ "${rank[$theirs]}" -gt "${rank[$layer]}" ]; then
      echo "FAIL: $file ($layer) includes $header ($theirs): an upward edge"
      fail=1
    fi
  done < <(grep -h '^#include "' "$file")
}
count=0
while IFS= read -r f; do
  part=${f#"$src"/}; layer=${part%%/*}
  [ -n "${rank[$layer]:-}" ] || { echo "FAIL: $f is in no layer"; fail=1; continue; }
  check "$f" "$layer"
  count=$((count + 1))
done < <(find "$src" -name '*.cc' -o -name '*.cu' -o -name '*.h' | sort)
for h in "$inc"/tierzero/*.h; do check "$h" "${owner[$(basename "$h")]}"; count=$((count + 1)); done
# docs/architecture.md's tree names every folder of src/ and only folders
# that exist (top-level lines "src/X/", subfolder lines "  Y/" under them).
doc=$src/../docs/architecture.md
named=$(grep -o '^src/[a-z_]*/' "$doc" | sort -u)
actual=$(find "$src" -mindepth 1 -maxdepth 1 -type d -printf 'src/%f/\n' | sort)
for d in $(comm -3 <(echo "$named") <(echo "$actual")); do echo "FAIL: docs/architecture.md and src/ disagree on $d"; fail=1; done
parent=""
while IFS= read -r line; do
  case $line in
    src/*/*) parent=$(cut -d/ -f1,2 <<<"$line") ;;
    "  "[a-z]*/" "*) sub=${line#  }; sub=${sub%%/*}
      [ -d "$src/../$parent/$sub" ] || { echo "FAIL: docs/architecture.md names $parent/$sub/, which does not exist"; fail=1; } ;;
  esac
done < <(sed -n '/^```/,/^```/p' "$doc" | sed -n '2,/^```/p')
[ $fail -eq 0 ] && echo "ok: $count files, no upward include across ${#layers[@]} layers; docs/architecture.md names every folder of src/"
exit $fail
