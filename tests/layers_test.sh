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
layers=(core topo quant comm data model run plan backend gpu ckpt sharded sim)
declare -A rank
for i in "${!layers[@]}"; do rank[${layers[$i]}]=$i; done
# The public headers (include/tierzero: what the CLI and a library user
# include) and the layer that implements each. Every other header lives
# beside its sources under src/.
declare -A owner=(
  [error.h]=core [dtype.h]=core [process_memory.h]=core
  [topology.h]=topo [system.h]=topo [device.h]=topo [mesh_shape.h]=topo
  [communicator.h]=comm [mesh.h]=comm [order_check.h]=comm [mpi.h]=comm [flight_recorder.h]=comm [flight_diagnose.h]=comm
  [data.h]=data [tokenizer.h]=data
  [gpt_config.h]=model [optim.h]=model
  [train_config.h]=run [trainer.h]=run [generate.h]=run
  [plan.h]=plan [deepspeed_config.h]=plan
  [backend.h]=backend
  [gpu_backend.h]=gpu [nccl.h]=gpu
  [checkpoint.h]=ckpt [hugging_face.h]=ckpt [state_reader.h]=ckpt
  [sharded_trainer.h]=sharded
  [simulator.h]=sim [planner.h]=sim [engine.h]=sim [model_code.h]=sim [corpus.h]=sim [corpus_fit.h]=sim [sensitivity.h]=sim
)
fail=0
for h in "$inc"/tierzero/*.h; do
  [ -n "${owner[$(basename "$h")]:-}" ] || { echo "FAIL: $(basename "$h") has no layer in $0"; fail=1; }
done
for h in "${!owner[@]}"; do
  [ -f "$inc/tierzero/$h" ] || { echo "FAIL: $0 names tierzero/$h, which does not exist"; fail=1; }
done
# The public face is closed: a public header, and the CLI, include only public headers.
while IFS= read -r line; do
  echo "FAIL: ${line%%:*} includes ${line#*#include }, which is not public (include/tierzero)"; fail=1
done < <(grep -H '^#include "' "$inc"/tierzero/*.h "$src"/../tools/tierzero/*.cc "$src"/../tools/tierzero/*.h |
         grep -v '#include "tierzero/' | grep -v 'tools/tierzero/[a-z_]*\.[ch]*:#include "\(commands\|validators\|train_report\|breakdown_report\|early_signals\|preemption\|launch_child\|flight_signals\|[a-z_]*_bench\|step_log\|log_file\|event_file\|tensorboard_log\|tensorboard_event\.pb\|csv_log\|html_page\|page_assets\|chart\|run_metrics\|run_report\|plan_html\|sim_output\)\.h"')
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
