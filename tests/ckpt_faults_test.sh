#!/usr/bin/env bash
# The faults of a checkpointed run, end to end with the CLI: a rank SIGKILLed
# mid-training or mid-write, a stuck collective, a rank-local exception, a
# diverged run, signals from outside, and what --keep, --metrics, leftovers
# and refused resumes do (ckpt_test.sh has resume, resharding and export).
# Usage: ckpt_faults_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/ckpt_lib.sh"

# A finished gpt-tiny run at step 15 (seed 1234) and its weights, for the
# refused resumes, --keep and --init below.
run 1 --strategy ddp --steps 15 --micro-batch 2 --save-dir "$tmp/a" --save-every 15 2>"$tmp/log" &&
  "$tz" ckpt export "$tmp/a" --safetensors "$tmp/w.safetensors" 2>>"$tmp/log" || { cat "$tmp/log"; bad "the run to start from"; }

# 1. A rank killed with SIGKILL mid-training: non-zero exit naming the rank; resume latest continues.
rm -rf "$tmp/k"
( run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps 400 --micro-batch 2 --save-dir "$tmp/k" --save-every 5 \
    >"$tmp/klog" 2>&1; echo $? > "$tmp/krc" ) &
for i in $(seq 1 200); do [ -f "$tmp/k/latest" ] && break; sleep 0.1; done
sleep 0.5
victim=$(pgrep -f "tierzero train --model gpt-tiny.*$tmp/k" | sed -n 4p)
kill -9 "$victim"
wait
rc=$(cat "$tmp/krc")
if [ "$rc" -ne 0 ] && grep -qiE "rank [0-9]+.*(signal 9|killed)|killed.*rank" "$tmp/klog"; then
  say "ok: SIGKILL of a rank ends the job (exit $rc): $(grep -iE 'rank [0-9]+' "$tmp/klog" | head -1 | tr -s ' ')"
else bad "SIGKILL (exit $rc)"; tail -5 "$tmp/klog"; fi
last=$(sed 's/step-0*//' "$tmp/k/latest")
run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps $((last + 5)) --micro-batch 2 --save-dir "$tmp/k" --resume latest \
  --metrics "$tmp/kres.jsonl" 2>/dev/null
python3 -c "
import json; s=[json.loads(l)['step'] for l in open('$tmp/kres.jsonl')]; assert s == list(range($last + 1, $last + 6)), s; print('   resumed after step', $last)" \
  && say "ok: --resume latest continues from the last complete checkpoint" || bad "resume latest after SIGKILL"

# 2. A collective that does not complete within --comm-timeout aborts the job, naming it.
out=$(TIERZERO_FAULT_STALL=5:3 timeout 120 "$mpirun" --oversubscribe -np 8 "$tz" train --model gpt-tiny --seq-len 32 \
  --strategy zero3 --topology package=2,node=2,world=2 --steps 10 --micro-batch 2 --comm-timeout 3 2>&1); rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "did not complete within 3 s" <<<"$out"; then
  say "ok: comm timeout (exit $rc): $(grep -m1 'did not complete' <<<"$out" | cut -c1-150)"
else bad "comm timeout (exit $rc)"; tail -5 <<<"$out"; fi

# 3. --keep prunes what this run wrote: another run's newer checkpoint stays
#    (with a warning), `latest` names this run's newest, which exists.
mkdir -p "$tmp/keep" && cp -r "$tmp/a/step-00000015" "$tmp/keep/"
run 1 --strategy ddp --steps 10 --micro-batch 2 --save-dir "$tmp/keep" --save-every 5 --keep 1 2>"$tmp/log"; rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$tmp/keep/latest")" = step-00000010 ] && [ -d "$tmp/keep/step-00000010" ] && [ -d "$tmp/keep/step-00000015" ] &&
   [ ! -d "$tmp/keep/step-00000005" ] && grep -q "1 checkpoint(s) of another run newer than this run's step-00000005 (newest step-00000015)" "$tmp/log"; then
  say "ok: --keep keeps another run's newer checkpoint and this run's latest"
else bad "--keep with a newer foreign step: rc $rc, $(ls "$tmp/keep" | tr '\n' ' '), latest $(cat "$tmp/keep/latest")"; cat "$tmp/log"; fi

# 4. --metrics on --resume: rows before the resumed step kept, the rest rewritten once.
run 1 --strategy ddp --steps 6 --micro-batch 2 --save-dir "$tmp/met" --save-every 3 --metrics "$tmp/met.jsonl" 2>/dev/null
run 1 --strategy ddp --steps 6 --micro-batch 2 --resume "$tmp/met/step-00000003" --metrics "$tmp/met.jsonl" 2>/dev/null
python3 -c "
import json; s=[json.loads(l)['step'] for l in open('$tmp/met.jsonl')]; assert s == [1, 2, 3, 4, 5, 6], s" \
  && say "ok: metrics appended on resume (steps 1-6 once each)" || bad "metrics on resume: $(cut -c1-12 "$tmp/met.jsonl" | tr '\n' ' ')"

# 5. What an interrupted save left behind is removed at the next start, and said.
mkdir -p "$tmp/left/.tmp-step-00000099" && echo junk > "$tmp/left/latest.tmp"
run 1 --strategy ddp --steps 1 --micro-batch 2 --save-dir "$tmp/left" --save-every 1 2>"$tmp/log"
if grep -q "removed '.tmp-step-00000099'" "$tmp/log" && grep -q "removed 'latest.tmp'" "$tmp/log" && [ ! -e "$tmp/left/.tmp-step-00000099" ] &&
   [ "$(cat "$tmp/left/latest")" = step-00000001 ]; then say "ok: leftovers of an interrupted save removed"; else bad "leftovers"; cat "$tmp/log"; fi

# 6. Resuming with nothing left to train, or with another seed (another data order), is refused.
expect_fail "is at step 15 and this run ends at --steps 12: nothing to train" -- run 1 --strategy ddp --steps 12 --resume "$tmp/a"
expect_fail "was trained with seed 1234 and this run has seed 7" -- run 1 --strategy ddp --steps 16 --seed 7 --resume "$tmp/a"
run 1 --strategy ddp --steps 16 --micro-batch 2 --seed 7 --allow-seed-change --resume "$tmp/a" 2>"$tmp/log" &&
  grep -q "changes the data order (--allow-seed-change)" "$tmp/log" && say "ok: --allow-seed-change resumes with a warning" || bad "allow-seed-change"

# 7. A rank-local failure of any type (std::bad_alloc on rank 2) ends the whole job, naming the rank.
out=$(TIERZERO_FAULT_THROW=2:3 timeout 120 "$mpirun" --oversubscribe -np 4 "$tz" train --model gpt-tiny --seq-len 32 \
  --strategy zero3 --topology node=2,world=2 --steps 10 --micro-batch 2 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -q "rank 2: internal error: std::bad_alloc" <<<"$out"; then say "ok: bad_alloc on one rank ends the job (exit 1)"
else bad "bad_alloc on one rank (exit $rc)"; tail -5 <<<"$out"; fi

# 8. A run whose loss stays non-finite stops (exit 4) instead of skipping forever.
out=$(run 1 --strategy ddp --steps 200 --micro-batch 2 --lr 1e30 --max-bad-steps 3 2>&1); rc=$?
[ $rc -eq 4 ] && grep -q "were not finite for 3 steps in a row" <<<"$out" && say "ok: diverged run stops with exit 4" || { bad "max-bad-steps (exit $rc)"; tail -3 <<<"$out"; }

# 9. --init from weights holding a NaN is refused, naming the tensor.
python3 - "$tmp/w.safetensors" "$tmp/nan.safetensors" <<'PY'
import json, struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", data[:8])[0]
name, t = next((k, v) for k, v in json.loads(data[8:8 + n]).items() if k != "__metadata__")
at = 8 + n + t["data_offsets"][0] + 4 * 5
data[at:at + 4] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(data)
PY
expect_fail "holds a non-finite value (nan at element 5)" -- run 1 --strategy ddp --steps 1 --init "$tmp/nan.safetensors"
# 10. A real signal from outside to one rank of a running job, and a second
#     one to another rank right after: one complete checkpoint, exit 75,
#     and the resumed run matches an uninterrupted one bit for bit (the same
#     --steps: the learning-rate schedule spans them).
long=(--strategy zero3 --topology node=4,world=2 --steps 200 --micro-batch 2)
run 8 "${long[@]}" --metrics "$tmp/ext_ref.jsonl" 2>/dev/null || bad "the uninterrupted 200-step run"
run 8 "${long[@]}" --save-dir "$tmp/ext" --save-every 1000 --metrics "$tmp/ext1.jsonl" 2>"$tmp/extlog" &
job=$!
for _ in $(seq 300); do [ "$( (wc -l < "$tmp/ext1.jsonl") 2>/dev/null || echo 0)" -ge 5 ] && break; sleep 0.1; done
ranks=($(pgrep -f "^$tz train .*$tmp/ext"))
kill -USR1 "${ranks[3]}" && kill -TERM "${ranks[5]}"
wait $job; rc=$?
stopped=$(wc -l < "$tmp/ext1.jsonl")
if [ $rc -eq 75 ] && [ ${#ranks[@]} -eq 8 ] && [ "$stopped" -lt 200 ] && [ "$(cat "$tmp/ext/latest")" = "$(printf 'step-%08d' "$stopped")" ] &&
   "$tz" ckpt verify "$tmp/ext" >/dev/null && compare "$tmp/ext_ref.jsonl" "$tmp/ext1.jsonl" 0 0 &&
   run 8 "${long[@]}" --save-dir "$tmp/ext" --resume latest --metrics "$tmp/ext2.jsonl" 2>/dev/null &&
   compare "$tmp/ext_ref.jsonl" "$tmp/ext2.jsonl" 0 "$stopped"; then
  say "ok: two signals from outside stop the job after step $stopped with one sound checkpoint; resumed bit for bit"
else bad "signals from outside (exit $rc, ${#ranks[@]} rank processes, $stopped steps, latest $(cat "$tmp/ext/latest" 2>/dev/null))"; tail -5 "$tmp/extlog"; fi

# 11. A rank SIGKILLed while its background writer is halfway through a
#     shard: `latest` still names the previous complete checkpoint.
run 8 --strategy zero3 --topology node=4,world=2 --steps 5 --micro-batch 2 --save-dir "$tmp/ak" --save-every 5 2>/dev/null
TIERZERO_FAULT_KILL_IN_SAVE=3 run 8 --strategy zero3 --topology node=4,world=2 --steps 10 --micro-batch 2 --save-dir "$tmp/ak" \
  --save-every 5 --async-save --resume latest >"$tmp/log" 2>&1; rc=$?
[ $rc -ne 0 ] && [ "$(cat "$tmp/ak/latest")" = step-00000005 ] && [ -d "$tmp/ak/.tmp-step-00000010" ] && "$tz" ckpt verify "$tmp/ak" >/dev/null &&
  say "ok: SIGKILL during an asynchronous write leaves latest at the previous checkpoint" ||
  { tail -5 "$tmp/log"; bad "kill during async save (exit $rc, latest $(cat "$tmp/ak/latest"))"; }
# 12. Offload (DeepSpeed's offload_optimizer and offload_param): a ZeRO-3
#     config with the optimizer on the host, and one with the parameters
#     there too, train as --strategy zero3 does with DeepSpeed's defaults for
#     what the configs leave out (no clipping, betas (0.9, 0.999), no weight
#     decay, a constant rate), loss for loss; with both
#     in nvme under tierzero launch, a rank SIGKILLed mid-run resumes from
#     the last checkpoint (the swap files are scratch) and every loss equals
#     the uninterrupted run's.
cat > "$tmp/ds-offload.json" <<JSON
{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true}}}
JSON
cat > "$tmp/ds-offload-param.json" <<JSON
{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
 "offload_param": {"device": "cpu", "pin_memory": true}}}
JSON
off=(--topology node=4,world=2 --steps 60)
printf 'grad_clip = 0.0\nbeta2 = 0.999\nweight_decay = 0.0\nwarmup = 0\nmin_lr_ratio = 1.0\n' > "$tmp/ds-defaults.toml"
run 8 --strategy zero3 "${off[@]}" --micro-batch 2 --config "$tmp/ds-defaults.toml" --metrics "$tmp/off-ref.jsonl" 2>"$tmp/log" &&
  run 8 --deepspeed-config "$tmp/ds-offload.json" "${off[@]}" --metrics "$tmp/off-cpu.jsonl" 2>"$tmp/log" &&
  grep -q "optim offload cpu" "$tmp/log" && compare "$tmp/off-ref.jsonl" "$tmp/off-cpu.jsonl" 0 0 &&
  say "ok: a DeepSpeed ZeRO-3 config with the optimizer on the host trains loss for loss" || { tail -3 "$tmp/log"; bad "offload cpu"; }
run 8 --deepspeed-config "$tmp/ds-offload-param.json" "${off[@]}" --metrics "$tmp/off-param.jsonl" 2>"$tmp/log" &&
  grep -q "optim offload cpu, param offload cpu" "$tmp/log" && compare "$tmp/off-ref.jsonl" "$tmp/off-param.jsonl" 0 0 &&
  say "ok: a DeepSpeed ZeRO-3 config with the optimizer and the parameters on the host trains loss for loss" ||
  { tail -3 "$tmp/log"; bad "offload_param cpu"; }
"$tz" launch --max-restarts 2 --backoff 0 -- "$mpirun" --oversubscribe -np 8 "$tz" train --model gpt-tiny --seq-len 32 --param-dtype fp32 \
  --log-every 1000 --strategy zero3 "${off[@]}" --micro-batch 2 --config "$tmp/ds-defaults.toml" --offload-optimizer nvme --offload-param nvme --nvme-path "$tmp/nvme" --save-dir "$tmp/offk" \
  --save-every 10 --metrics "$tmp/off-nvme.jsonl" > "$tmp/offlog" 2>&1 &
launcher=$!
for _ in $(seq 300); do [ "$( (wc -l < "$tmp/off-nvme.jsonl") 2>/dev/null || echo 0)" -ge 25 ] && break; sleep 0.1; done
kill -9 "$(pgrep -f "^$tz train .*$tmp/offk" | sed -n 3p)"
wait $launcher; rc=$?
if [ $rc -eq 0 ] && grep -q "attempt 2 of 3" "$tmp/offlog" && [ -z "$(ls -A "$tmp/nvme" 2>/dev/null)" ] &&
   python3 - "$tmp/off-ref.jsonl" "$tmp/off-nvme.jsonl" <<'PY'
import json, sys
ref, got = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert [r["step"] for r in got] == list(range(1, 61)), [r["step"] for r in got][:12]
assert all(a["loss"] == b["loss"] for a, b in zip(ref, got)), "losses differ"
PY
then say "ok: the optimizer and the parameters in NVMe swap files survive a SIGKILLed rank: resumed, every loss bit-identical, no swap file left"
else bad "offload nvme after SIGKILL (exit $rc)"; tail -5 "$tmp/offlog"; fi
exit $fail
