#!/usr/bin/env bash
# One step numbering everywhere (docs/formats.md, "Step numbers"): a step's
# number is the steps completed with it, 1 for the first.
#  1. One process, 3 steps, a validation every 3: the console says
#     "step 3/3 val_loss", the metrics' rows are steps 1-3 with val_loss at
#     3, TensorBoard's events and the CSV files hold steps 1-3 with the
#     metrics' values (event_check), val/loss at step 3.
#  2. Two ranks with --save-dir and no --save-every, a preemption notice
#     before step 2: "after step 2: saved DIR/step-00000002", the checkpoint's
#     step 2; resumed, "resumed after step 2", rows 3-4, and the run saves
#     after its last step (step-00000004) though --save-every was not given;
#     the report marks the restart after step 2.
# Usage: step_numbers_test.sh TIERZERO MPIRUN EVENT_CHECK
source "$(dirname "${BASH_SOURCE[0]}")/script_lib.sh"
check=$3
common=(--model gpt-tiny --seq-len 32 --micro-batch 2 --val-fraction 0.05 --eval-batches 1 --log-every 1000)

# 1. The console, the metrics, TensorBoard and the CSV files.
"$tz" train "${common[@]}" --steps 3 --eval-every 3 --metrics "$tmp/m.jsonl" --tensorboard "$tmp/tb" --csv-monitor "$tmp/csv" \
  > "$tmp/log" 2>&1 || { cat "$tmp/log"; bad "the 3-step run"; }
grep -q "^step 3/3 val_loss " "$tmp/log" && grep -q "^step 1/3 loss " "$tmp/log" && ! grep -q "step 0/" "$tmp/log" &&
  ok "the console: steps 1 and 3 of 3, the validation after step 3" || { cat "$tmp/log"; bad "the console's steps"; }
python3 - "$tmp/m.jsonl" "$tmp/csv/val_loss.csv" <<'PY' && ok "the metrics: steps 1-3, val_loss at step 3; the CSV's val_loss at step 3" || bad "metrics or CSV steps"
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [1, 2, 3], [r["step"] for r in rows]
assert [r["step"] for r in rows if "val_loss" in r] == [3], rows
val = list(csv.reader(open(sys.argv[2], newline="")))
assert [int(s) for s, _ in val[1:]] == [3] and float(val[1][1]) == rows[2]["val_loss"], val
PY
out=$("$check" "$tmp/tb" "$tmp/m.jsonl" 2>&1) && grep -q "3 steps of scalars" <<<"$out" &&
  ok "TensorBoard: the metrics' steps 1-3 and values, val/loss at step 3" || bad "the event files: $out"

# 2. A preempted run: the message, the checkpoint, the resume, the save at the end without --save-every, the report.
run() { "$mpirun" --oversubscribe -np 2 "$tz" train "${common[@]}" --strategy zero3 --steps 4 --save-dir "$tmp/ck" --metrics "$tmp/p.jsonl" "$@"; }
out=$(TIERZERO_FAULT_SIGNAL=1:2 run 2>&1); rc=$?
[ $rc -eq 75 ] && grep -q "after step 2: saved $tmp/ck/step-00000002; rerun with --resume latest" <<<"$out" &&
  [ "$(cat "$tmp/ck/latest")" = step-00000002 ] && "$tz" ckpt inspect "$tmp/ck" | grep -q "^step  *2 (steps completed; a resumed run continues with step 3)" &&
  ok "preempted before step 2: 'after step 2: saved .../step-00000002', the checkpoint's step 2" || { echo "$out" | tail -3; bad "the preemption (exit $rc)"; }
out=$(run --resume latest 2>&1) && grep -q "resumed after step 2$" <<<"$out" && [ "$(cat "$tmp/ck/latest")" = step-00000004 ] &&
  python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [1, 2, 3, 4] and rows[2]["resumed"] == {"from_step": 2, "redone": 0}, rows' "$tmp/p.jsonl" &&
  ok "resumed after step 2: rows 3-4, the last step saved without --save-every (step-00000004)" || { echo "$out" | tail -3; bad "the resumed run"; }
page=$("$tz" report "$tmp/p.jsonl" -o "$tmp/report.html" 2> "$tmp/report.err") && grep -q "resumed after 2" "$tmp/report.html" &&
  ok "the report marks the restart after step 2" || { cat "$tmp/report.err"; bad "the report's restart mark"; }
[ $fail -eq 0 ] && echo "step_numbers: all passed"
exit $fail
