#!/usr/bin/env bash
# Checkpoints end to end with the CLI: exact resume, resharding to other
# rank counts and strategies, inspect/export/init, damaged checkpoints,
# a rank killed in a save, preemption and asynchronous saves
# (ckpt_faults_test.sh has the run's other faults).
# Usage: ckpt_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/ckpt_lib.sh"
# 1. Uninterrupted hier3 run on 8 ranks, saving every 5 steps.
run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps 15 --micro-batch 2 --save-dir "$tmp/a" --save-every 5 --keep 2 \
  --metrics "$tmp/full.jsonl" 2>"$tmp/log" || { cat "$tmp/log"; bad "uninterrupted run"; }
[ "$(ls "$tmp/a" | grep -c step-)" = 2 ] && [ "$(cat "$tmp/a/latest")" = step-00000015 ] && say "ok: keep 2, latest" || bad "keep/latest: $(ls "$tmp/a")"

# 2. Same ranks, topology and plan: bit-identical losses.
run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps 15 --micro-batch 2 --resume "$tmp/a/step-00000010" \
  --metrics "$tmp/same.jsonl" 2>"$tmp/log" && compare "$tmp/full.jsonl" "$tmp/same.jsonl" 0 10 && ! grep -q re-partitioned "$tmp/log" \
  && say "ok: exact resume" || { cat "$tmp/log"; bad "exact resume"; }

# 2b. A checkpoint that spells the package level the old way ("gpu"), resumed
#     with the old spelling on the command line: the same layout, read in
#     place (not re-partitioned), bit-identical, with a deprecation warning.
cp -r "$tmp/a/step-00000010" "$tmp/old"
python3 - "$tmp/old/meta.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["topology"] == "package=2,node=2,world=2", m["topology"]
m["topology"] = "gpu=2,node=2,world=2"
m["plan"]["bwd_params"] = "gpu"
m["plan"]["grad_bits"] = m["plan"]["grad_bits"].replace("package=", "gpu=")
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
run 8 --strategy hier3 --topology gpu=2,node=2,world=2 --steps 15 --micro-batch 2 --resume "$tmp/old" \
  --metrics "$tmp/old.jsonl" 2>"$tmp/log" && compare "$tmp/full.jsonl" "$tmp/old.jsonl" 0 10 && ! grep -q re-partitioned "$tmp/log" \
  && grep -q "level name 'gpu' is deprecated" "$tmp/log" && say "ok: old spelling of the package level" || { cat "$tmp/log"; bad "old spelling"; }

# 3. Resharding: the hier3 checkpoint resumed by zero3 on 4 ranks and ddp on 1
#    (same global batch). Both continue from the identical fp32 state without
#    quantisation, so they match each other to float rounding (1e-5), and the
#    quantised hier3 run within its quantisation noise (1e-2).
run 4 --strategy zero3 --topology node=2,world=2 --steps 15 --micro-batch 4 --resume "$tmp/a/step-00000010" \
  --metrics "$tmp/z3.jsonl" 2>"$tmp/log" && grep -q "resumed after step 10 (re-partitioned" "$tmp/log" || { cat "$tmp/log"; bad "zero3 on 4"; }
run 1 --strategy ddp --steps 15 --micro-batch 16 --resume "$tmp/a/step-00000010" --metrics "$tmp/ddp.jsonl" 2>"$tmp/log" || { cat "$tmp/log"; bad "ddp on 1"; }
compare "$tmp/ddp.jsonl" "$tmp/z3.jsonl" 1e-5 10 && compare "$tmp/full.jsonl" "$tmp/z3.jsonl" 1e-2 10 && say "ok: resharded 8 -> 4 -> 1" || bad "resharding"

# 4. inspect, export to safetensors, start a run from it.
"$tz" ckpt inspect "$tmp/a" > "$tmp/inspect" && grep -q "checksums    all match" "$tmp/inspect" && say "ok: inspect" || bad "inspect"
"$tz" ckpt export "$tmp/a" --safetensors "$tmp/w.safetensors" 2>/dev/null && run 1 --strategy ddp --steps 1 --micro-batch 2 \
  --init "$tmp/w.safetensors" --metrics "$tmp/init.jsonl" 2>/dev/null && python3 -c "
import json,sys; l=json.loads(open('$tmp/init.jsonl').readline())['loss']; assert l < 4.5, l; print('   loss from exported weights', round(l,4))" \
  && say "ok: export + --init" || bad "export/init"

# 4b. Hugging Face GPT-2 export; --init from it trains like --init from the
#     tierzero export; sampling is deterministic per seed and the same from
#     the checkpoint, the safetensors export and the HF directory.
"$tz" ckpt export "$tmp/a" --format hf-gpt2 --output "$tmp/hf" 2>/dev/null && [ -f "$tmp/hf/config.json" ] \
  && run 1 --strategy ddp --steps 1 --micro-batch 2 --init "$tmp/hf" --metrics "$tmp/init-hf.jsonl" 2>/dev/null \
  && compare "$tmp/init.jsonl" "$tmp/init-hf.jsonl" 0 0 && say "ok: export hf-gpt2 + --init" || bad "hf-gpt2 export/init"
sample() { "$tz" sample --checkpoint "$1" --prompt "And God said" --tokens 48 --top-k 40 --seed "$2"; }
s1=$(sample "$tmp/a" 1) && s2=$(sample "$tmp/a" 1) && s3=$(sample "$tmp/a" 2) && s4=$(sample "$tmp/w.safetensors" 1) \
  && s5=$(sample "$tmp/hf" 1) && [ "$s1" = "$s2" ] && [ "$s1" != "$s3" ] && [ "$s1" = "$s4" ] && [ "$s1" = "$s5" ] \
  && [ "${s1#And God said}" != "$s1" ] && say "ok: sample: $(head -c 60 <<<"$s1" | tr '\n' ' ')" || bad "sample: '$s1' '$s2' '$s3' '$s4' '$s5'"

# 4c. A Llama-family model (llama-tiny: RMSNorm, RoPE, GQA, SwiGLU, untied
#     head): exact resume under zeropp, resharded to zero3 and ddp, sampled.
lrun() { "$mpirun" --oversubscribe -np "$1" "$tz" train --model llama-tiny --seq-len 32 --param-dtype fp32 --log-every 1000 "${@:2}"; }
lrun 4 --strategy zeropp --topology node=2,world=2 --steps 10 --micro-batch 2 --save-dir "$tmp/l" --save-every 5 \
  --metrics "$tmp/lfull.jsonl" 2>"$tmp/log" \
  && lrun 4 --strategy zeropp --topology node=2,world=2 --steps 10 --micro-batch 2 --resume "$tmp/l/step-00000005" \
    --metrics "$tmp/lsame.jsonl" 2>"$tmp/log" && compare "$tmp/lfull.jsonl" "$tmp/lsame.jsonl" 0 5 \
  && lrun 2 --strategy zero3 --steps 10 --micro-batch 4 --resume "$tmp/l/step-00000005" --metrics "$tmp/lz3.jsonl" 2>"$tmp/log" \
  && lrun 1 --strategy ddp --steps 10 --micro-batch 8 --resume "$tmp/l/step-00000005" --metrics "$tmp/lddp.jsonl" 2>"$tmp/log" \
  && compare "$tmp/lddp.jsonl" "$tmp/lz3.jsonl" 1e-5 5 && "$tz" ckpt inspect "$tmp/l" | grep -q "llama-tiny: V 256, T 64, L 2, C 64, H 4, KV 2, F 176, rmsnorm" \
  && ls=$("$tz" sample --checkpoint "$tmp/l" --prompt "And God said" --tokens 16 --seed 1) && [ "${ls#And God said}" != "$ls" ] \
  && ! "$tz" ckpt export "$tmp/l" --format hf-gpt2 --output "$tmp/lhf" 2>"$tmp/log" && grep -q "is a Llama-family model" "$tmp/log" \
  && say "ok: llama-tiny exact resume, resharded 4 -> 2 -> 1, sampled" || { cat "$tmp/log"; bad "llama-tiny checkpoints"; }
# 4d. Its Hugging Face export (LlamaForCausalLM): --model and --init from the
#     directory train as --init from the tierzero export; sampling from it is
#     the checkpoint's.
"$tz" ckpt export "$tmp/l" --format hf --output "$tmp/lhf" 2>/dev/null && grep -q LlamaForCausalLM "$tmp/lhf/config.json" \
  && "$tz" ckpt export "$tmp/l" --safetensors "$tmp/l.safetensors" 2>/dev/null \
  && lrun 1 --strategy ddp --steps 1 --micro-batch 2 --init "$tmp/l.safetensors" --metrics "$tmp/linit.jsonl" 2>/dev/null \
  && "$mpirun" --oversubscribe -np 1 "$tz" train --model "$tmp/lhf" --seq-len 32 --param-dtype fp32 --strategy ddp --steps 1 --micro-batch 2 \
    --init "$tmp/lhf" --metrics "$tmp/linit-hf.jsonl" 2>"$tmp/log" && compare "$tmp/linit.jsonl" "$tmp/linit-hf.jsonl" 0 0 \
  && [ "$("$tz" sample --checkpoint "$tmp/lhf" --prompt "And God said" --tokens 16 --seed 1)" = "$ls" ] \
  && "$tz" ckpt export "$tmp/l" --format hf --dtype bf16 --max-shard-size 100KB --output "$tmp/lhf16" 2>/dev/null \
  && [ -f "$tmp/lhf16/model.safetensors.index.json" ] && [ -f "$tmp/lhf16/model-00002-of-00003.safetensors" ] \
  && "$tz" sample --checkpoint "$tmp/lhf16" --prompt "And God said" --tokens 4 >/dev/null \
  && ! "$tz" ckpt export "$tmp/l" --dtype bf16 --safetensors "$tmp/x.safetensors" 2>/dev/null \
  && say "ok: llama-tiny hf export, --model/--init from it, sampled alike; bf16 in 3 shards" || { cat "$tmp/log"; bad "llama-tiny hf export"; }

# 5. Damaged checkpoints: clear errors naming the file, exit 2, nothing overwritten.
cp -r "$tmp/a/step-00000015" "$tmp/t"
truncate -s 100 "$tmp/t/rank-00003.optim"
expect_fail "rank-00003.optim' is truncated" -- run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps 16 --resume "$tmp/t"
cp -r "$tmp/a/step-00000015" "$tmp/c"
printf 'X' | dd of="$tmp/c/rank-00005.params" bs=1 seek=10 conv=notrunc 2>/dev/null
expect_fail "rank-00005.params' is corrupt" -- run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps 16 --resume "$tmp/c"
cp -r "$tmp/a/step-00000015" "$tmp/m" && rm "$tmp/m/rank-00002.optim"
expect_fail "rank-00002.optim' is missing" -- run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps 16 --resume "$tmp/m"
expect_fail "is for model gpt-tiny" -- "$mpirun" --oversubscribe -np 1 "$tz" train --model gpt-mini --strategy ddp --steps 16 --resume "$tmp/a"
expect_fail "cannot write checkpoints to" -- run 1 --strategy ddp --steps 1 --save-dir /proc/tierzero-no-such-dir --save-every 1
"$tz" ckpt inspect "$tmp/c" >/dev/null 2>&1; [ $? -eq 2 ] && say "ok: inspect reports the corrupt shard (exit 2)" || bad "inspect corrupt"
[ "$(cat "$tmp/a/latest")" = step-00000015 ] && "$tz" ckpt inspect "$tmp/a" >/dev/null && say "ok: earlier checkpoints untouched" || bad "checkpoints damaged"

# 6. A rank killed during a save: the previous checkpoint still loads and resumes exactly.
TIERZERO_FAULT_KILL_IN_SAVE=3 run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps 15 --micro-batch 2 \
  --resume "$tmp/a/step-00000010" --save-dir "$tmp/a" --save-every 5 >/dev/null 2>&1
[ $? -ne 0 ] && [ "$(cat "$tmp/a/latest")" = step-00000015 ] && "$tz" ckpt inspect "$tmp/a" >/dev/null && say "ok: killed in save, previous checkpoint intact" || bad "kill in save"
run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps 15 --micro-batch 2 --resume "$tmp/a/step-00000010" \
  --metrics "$tmp/again.jsonl" 2>/dev/null && compare "$tmp/full.jsonl" "$tmp/again.jsonl" 0 10 && say "ok: resumes exactly after the crash" || bad "resume after crash"

# 7. Preemption: a SIGUSR1 to rank 3 before step 6 (fault injection) makes
#     every rank finish step 6, save it (step-00000006) and exit 75; the resumed run's losses
#     are the uninterrupted run's, bit for bit; ckpt verify passes.
out=$(TIERZERO_FAULT_SIGNAL=3:6 run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps 15 --micro-batch 2 \
  --save-dir "$tmp/pre" --save-every 100 --metrics "$tmp/pre1.jsonl" 2>&1); rc=$?
if [ $rc -eq 75 ] && grep -q "preempted (a rank received SIGTERM, SIGUSR1 or SIGINT, or found mpirun gone) after step 6: saved $tmp/pre/step-00000006;" <<<"$out" &&
   [ "$(cat "$tmp/pre/latest")" = step-00000006 ] && compare "$tmp/full.jsonl" "$tmp/pre1.jsonl" 0 0 &&
   "$tz" ckpt verify "$tmp/pre" >/dev/null &&
   run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps 15 --micro-batch 2 --save-dir "$tmp/pre" --resume latest \
     --metrics "$tmp/pre2.jsonl" 2>"$tmp/log" && compare "$tmp/full.jsonl" "$tmp/pre2.jsonl" 0 6; then
  say "ok: preempted by a signal on one rank (exit 75), resumed bit for bit"
else bad "preemption (exit $rc)"; tail -5 <<<"$out"; fi

#     A notice during the last step changes nothing: the run is complete
#     (exit 0), its final checkpoint written, nothing said of preemption.
out=$(TIERZERO_FAULT_SIGNAL=2:15 run 4 --strategy zero3 --topology node=2,world=2 --steps 15 --micro-batch 2 \
  --save-dir "$tmp/last" --save-every 100 --metrics "$tmp/last.jsonl" 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(cat "$tmp/last/latest")" = step-00000015 ] && ! grep -q preempted <<<"$out" && "$tz" ckpt verify "$tmp/last" >/dev/null &&
  say "ok: a notice during the last step: the run completes (exit 0)" || { bad "notice in the last step (exit $rc)"; tail -3 <<<"$out"; }

# 8. --async-save: the same checkpoints as synchronous saves, byte for byte
#     (those of section 1, kept: steps 10 and 15), and the same losses.
run 8 --strategy hier3 --topology package=2,node=2,world=2 --steps 15 --micro-batch 2 --save-dir "$tmp/as" --save-every 5 --keep 2 \
  --async-save --metrics "$tmp/as.jsonl" 2>"$tmp/log" && [ "$(cat "$tmp/as/latest")" = step-00000015 ] &&
  diff -r "$tmp/a/step-00000010" "$tmp/as/step-00000010" >/dev/null && diff -r "$tmp/a/step-00000015" "$tmp/as/step-00000015" >/dev/null &&
  compare "$tmp/full.jsonl" "$tmp/as.jsonl" 0 0 && say "ok: --async-save writes the synchronous checkpoints, byte for byte" ||
  { cat "$tmp/log"; bad "async save"; }
# 9. ckpt verify names the first bad file and exits 2; a missing meta.json too.
cp -r "$tmp/pre/step-00000006" "$tmp/bad7"
printf 'X' | dd of="$tmp/bad7/rank-00002.optim" bs=1 seek=100 conv=notrunc 2>/dev/null
out=$("$tz" ckpt verify "$tmp/bad7" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "rank-00002.optim" <<<"$out" && say "ok: ckpt verify names a corrupt shard (exit 2)" || bad "ckpt verify corrupt (exit $rc): $out"
rm "$tmp/bad7/meta.json"
out=$("$tz" ckpt verify "$tmp/bad7" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "meta.json" <<<"$out" && say "ok: ckpt verify without meta.json (exit 2)" || bad "ckpt verify no meta (exit $rc): $out"
exit $fail
