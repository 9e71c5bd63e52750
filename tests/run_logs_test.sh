#!/usr/bin/env bash
# A run's logs end to end: 2 ranks of gpt-tiny with validation, fp16 (the
# loss scale), --breakdown and checkpoints write TensorBoard events (from a
# DeepSpeed config's tensorboard section) and DeepSpeed's CSV files; the
# run dies after step 4 (checkpoint at 3) and resumes to 8. Every event
# record decodes with its CRCs and the scalars equal the metrics (which
# mark the restart); a file cut mid-record keeps its whole records; the CSV
# files hold each step once; an unwritable folder fails at start (exit 2).
#   run_logs_test.sh TIERZERO MPIRUN EVENT_CHECK
set -u
tz=$1 mpirun=$2 check=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
run() { "$mpirun" --oversubscribe -np 2 "$tz" train --model gpt-tiny --seq-len 32 --micro-batch 2 --log-every 1000 --param-dtype fp16 \
  --val-fraction 0.05 --eval-every 3 --eval-batches 2 --breakdown --save-dir "$tmp/ck" --save-every 3 --metrics "$tmp/m.jsonl" "$@"; }
cat > "$tmp/ds.json" <<JSON
{"zero_optimization": {"stage": 3}, "tensorboard": {"enabled": true, "output_path": "$tmp/runs", "job_name": "tiny"},
 "csv_monitor": {"enabled": true, "output_path": "$tmp/csv", "job_name": "tiny"}}
JSON

TIERZERO_FAULT_THROW=1:5 run --deepspeed-config "$tmp/ds.json" --steps 8 > "$tmp/log1" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "rank 1: internal error" "$tmp/log1" || bad "the first run should die before step 5 (exit $rc)"
run --deepspeed-config "$tmp/ds.json" --steps 8 --resume latest > "$tmp/log2" 2>&1 || { tail -5 "$tmp/log2"; bad "the resumed run"; }
[ "$(ls "$tmp/runs/tiny" | grep -c tfevents)" = 2 ] && echo "ok: a file per run start" || bad "event files: $(ls "$tmp/runs/tiny")"
"$check" "$tmp/runs/tiny" "$tmp/m.jsonl" && echo "ok: every record's CRCs, the scalars equal the metrics" || bad "the event files against the metrics"

python3 - "$tmp/m.jsonl" "$tmp/csv/tiny" <<'PY' || fail=1
import csv, json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == list(range(1, 9)), [r["step"] for r in rows]
assert [r["step"] for r in rows if "resumed" in r] == [4], "the resumed run's first row marks it"
assert rows[3]["resumed"] == {"from_step": 3, "redone": 1}, rows[3]["resumed"]  # step 4 ran twice
assert "run" in rows[0] and rows[3]["run"]["step"] == 3 and rows[0]["run"]["world_size"] == 2
raw = open(os.path.join(sys.argv[2], "train_loss.csv"), newline="").read()
assert raw.startswith("step,loss\r\n") and raw.count("step,") == 1, raw[:40]
table = list(csv.reader(open(os.path.join(sys.argv[2], "train_loss.csv"), newline="")))
assert [int(s) for s, _ in table[1:]] == list(range(1, 9)), table
assert all(float(v) == r["loss"] for (s, v), r in zip(table[1:], rows)), "CSV losses differ from the metrics"
val = list(csv.reader(open(os.path.join(sys.argv[2], "val_loss.csv"), newline="")))
assert val[0] == ["step", "loss"] and [int(s) for s, _ in val[1:]] == [r["step"] for r in rows if "val_loss" in r], val
print("ok: DeepSpeed's CSV layout, each step once, values as the metrics")
PY

# A killed writer's file: cut inside its last record, every whole record still reads.
f=$(ls "$tmp"/runs/tiny/*tfevents* | tail -1)
mkdir "$tmp/cut"
head -c $(( $(stat -c %s "$f") - 7 )) "$f" > "$tmp/cut/events.out.tfevents.cut"
out=$("$check" "$tmp/cut" /dev/null 2>&1)
grep -q "records, .* steps of scalars, session start 4, [0-9]* torn bytes" <<<"$out" && ! grep -q " 0 torn bytes" <<<"$out" \
  && echo "ok: a cut file reads to its last whole record" || bad "the cut file: $out"
printf 'x' | dd of="$tmp/cut/events.out.tfevents.cut" bs=1 seek=40 conv=notrunc 2>/dev/null
out=$("$check" "$tmp/cut" /dev/null 2>&1)
grep -q "fails its CRC-32C" <<<"$out" && echo "ok: a changed byte fails its CRC" || bad "a changed byte: $out"

# Unwritable folders fail at start, before any step: the DeepSpeed section's and the flag's.
touch "$tmp/file"
sed "s|$tmp/runs|$tmp/file|" "$tmp/ds.json" > "$tmp/ds-bad.json"
out=$("$mpirun" --oversubscribe -np 2 "$tz" train --model gpt-tiny --seq-len 32 --steps 2 --deepspeed-config "$tmp/ds-bad.json" \
  --metrics "$tmp/bad.jsonl" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "cannot write TensorBoard logs to '$tmp/file/tiny'" <<<"$out" && [ ! -e "$tmp/bad.jsonl" ] \
  && echo "ok: an unwritable tensorboard output_path fails at start (exit 2)" || bad "unwritable output_path: exit $rc: $out"
out=$("$tz" train --model gpt-tiny --seq-len 32 --steps 2 --csv-monitor "$tmp/file/csv" --metrics "$tmp/bad.jsonl" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "cannot write CSV monitor files to '$tmp/file/csv'" <<<"$out" && [ ! -e "$tmp/bad.jsonl" ] \
  && echo "ok: an unwritable --csv-monitor fails at start (exit 2)" || bad "unwritable --csv-monitor: exit $rc: $out"
[ $fail -eq 0 ] && echo "run logs: all passed"
exit $fail
