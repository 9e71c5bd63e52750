#!/usr/bin/env bash
# A Hugging Face export from a tensor-parallel run, reloaded at other
# degrees. gpt-tiny (on 2 ranks) and llama-tiny (on 4: zero3 over 2 data
# ranks, with sequence parallelism) train 4 steps at --tp 2 and save;
# `ckpt export --format hf` puts the members' slices together. Each export
# is read back with --init (gpt-tiny at TP 2, llama-tiny at TP 4: its 2
# key/value heads then shared by 2 members each; a model of 6 query heads
# over 3 key/value heads at TP 2 and 1) for one step at a learning
# rate of 1e-30, which leaves every fp32 weight as it is (an update below
# half an ulp of any weight the step moves), and saved.
# Checks, per reload:
# - the validation loss of the reloaded weights (the same held-out batches,
#   micro-batch and data-rank count) equals the TP 2 run's of its own weights
#   after step 4 bit for bit at TP 2, within fp32 reduction order (1e-6
#   relative) at TP 4: a slice put in another member's place, a
#   strided row-parallel slice misread or a shared head taken from the
#   wrong member moves it by far more;
# - the reloaded run's checkpoint, exported again, is the first export's
#   model.safetensors byte for byte: the weights went through the --init
#   reader's split at the new degree and back unchanged.
# Usage: tensor_parallel_export_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/script_lib.sh"
common=(--strategy zero3 --seq-len 32 --micro-batch 2 --param-dtype fp32 --val-fraction 0.1 --eval-batches 4 --log-every 100)
# val_loss FILE: the validation loss of the metrics' last row.
val_loss() { python3 -c 'import json, sys; print(repr([json.loads(l) for l in open(sys.argv[1])][-1]["val_loss"]))' "$1"; }
# check MODEL RANKS SP RELOAD_TP...: trains MODEL (a preset or a model file) at TP 2 on RANKS (SP: --sp or ''), exports, reloads at each RELOAD_TP.
check() {
  local model=$1 ranks=$2 sp=$3 d=$tmp/$(basename "$1" .toml)
  shift 3
  mkdir -p "$d"
  "$mpirun" --oversubscribe -np "$ranks" "$tz" train --model "$model" --tp 2 $sp --steps 4 "${common[@]}" --save-dir "$d/run" \
    --metrics "$d/run.jsonl" >"$d/log" 2>&1 && "$tz" ckpt export "$d/run" --format hf --output "$d/hf" 2>>"$d/log" ||
    { tail -5 "$d/log"; bad "$model: train at tp 2 and export"; return; }
  local want
  want=$(val_loss "$d/run.jsonl")
  for tp in "$@"; do
    local r=$d/tp$tp
    "$mpirun" --oversubscribe -np "$ranks" "$tz" train --model "$d/hf" --init "$d/hf" --tp "$tp" $sp --steps 1 --lr 1e-30 "${common[@]}" \
      --save-dir "$r" --metrics "$r.jsonl" >"$d/log" 2>&1 && "$tz" ckpt export "$r" --format hf --output "$r-hf" 2>>"$d/log" ||
      { tail -5 "$d/log"; bad "$model: --init from the export at tp $tp"; continue; }
    local got
    got=$(val_loss "$r.jsonl")
    python3 -c 'import sys; want, got, exact = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "2"
assert got == want if exact else abs(got - want) <= 1e-6 * want' "$want" "$got" "$tp" &&
      ok "$model ${sp:+(sp) }exported at tp 2, reloaded at tp $tp: validation loss $got (the saving run's $want)" ||
      bad "$model reloaded at tp $tp: validation loss $got, the saving run's $want"
    cmp -s "$d/hf/model.safetensors" "$r-hf/model.safetensors" &&
      ok "$model: the tp $tp reload's checkpoint exports the same model.safetensors, byte for byte" ||
      bad "$model: the tp $tp reload's export differs from the tp 2 run's"
  done
}
check gpt-tiny 2 '' 2
check llama-tiny 4 --sp 4
# 6 query heads over 3 key/value heads (llama-mini's), which TP 2 neither splits nor shares whole: each member holds
# two heads, head 1 on both; the export takes it from member 0, its owner. Reloaded at TP 1 (the whole model).
printf 'preset = "llama-tiny"\nchannels = 48\nheads = 6\nkv_heads = 3\n' > "$tmp/gqa63.toml"
check "$tmp/gqa63.toml" 2 '' 2 1
[ $fail -eq 0 ] && echo "tensor_parallel_export: all passed"
exit $fail
