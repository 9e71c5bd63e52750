#!/usr/bin/env bash
# Installs what is missing, builds the CLI, and runs the main job: gpt-tiny
# (or MODEL, e.g. MODEL=llama-mini) trained with the hier3 strategy on 8
# ranks (2 nodes x 2 packages x 2 ranks) on the built-in corpus, with
# held-out validation, ending with a sample of text from the final
# checkpoint; then the same layout's collectives measured side by side
# (and the system file its report predicts on, calibrated on the run's
# own step), and last the run's report (report.html: its path is the
# last line).
# Each phase prints its own elapsed time. TZ_DEMO_STEPS changes the steps.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
steps=${TZ_DEMO_STEPS:-1500}
tz_phase install
tz_install
tz_phase "build (the CLI only)"
TZ_TARGETS=tierzero_cli tz_build
tz_mpi_env
out="$TZ_BUILD/demo"
mkdir -p "$out"
tz_phase "training: $steps steps of ${MODEL:-gpt-tiny}, hier3 on 8 ranks (Ctrl-C saves a checkpoint and stops)"
"$TZ_BUILD/tierzero" launch --max-restarts 0 -- mpirun -np 8 "$TZ_BUILD/tierzero" train --strategy hier3 --topology package=2,node=2,world=2 \
  --model "${MODEL:-gpt-tiny}" --data builtin --steps "$steps" --micro-batch 4 --lr 0.003 --warmup 50 \
  --log-every 100 --metrics "$out/metrics.jsonl" --tensorboard "$out/tensorboard" --val-fraction 0.01 --eval-every 500 \
  --save-dir "$out/ckpt" --save-every "$steps" --keep 1
tz_phase "a sample from the final checkpoint (tierzero sample)"
"$TZ_BUILD/tierzero" sample --checkpoint "$out/ckpt" --prompt "And God said" --tokens 200 --temperature 0.8 --top-k 20 --seed 1
tz_phase "the collectives of this layout, measured (tierzero bench comm)"
# Its compute calibrated on the step the run trains (model, micro-batch, the model's context), all 8 ranks at once as
# in training: the report's predicted step rests on it.
mpirun -np 8 "$TZ_BUILD/tierzero" bench comm --topology package=2,node=2,world=2 --sizes 1048576,4194304 \
  --write-system "$out/measured-system.toml" --calibrate-model "${MODEL:-gpt-tiny}" --calibrate-micro-batch 4 --calibrate-seq-len 0
tz_phase "the run's report (tierzero report: its measured system, metrics and checkpoint)"
report=$("$TZ_BUILD/tierzero" report "$out")
tz_phase done
echo "demo: metrics in $out/metrics.jsonl, TensorBoard logs in $out/tensorboard, checkpoint in $out/ckpt, measured system in $out/measured-system.toml"
echo "demo: the run's report (open it in a browser; it needs no network):"
echo "$report"
