#!/usr/bin/env bash
# Bad layouts give one clear error (every rank fails alike) and exit code 2; the bench
# prints JSON whose hierarchical all-gather moves fewer world bytes.
set -u
tz=$1
mpirun=$2
fail=0
expect_exit() {  # expect_exit CODE PATTERN COUNT -- command...
  local code=$1 pattern=$2 count=$3
  shift 4
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ]; then echo "FAIL: '$*' exited $rc, expected $code"; echo "$out"; fail=1; return; fi
  local n
  n=$(grep -c -- "$pattern" <<<"$out")
  if [ "$n" -lt "$count" ]; then echo "FAIL: '$*' printed '$pattern' $n times, expected $count"; echo "$out"; fail=1; return; fi
  echo "ok: $*"
}
run8() { "$mpirun" --oversubscribe -np 8 "$tz" "$@"; }
# Every rank failing alike: one message, from rank 0, without a rank prefix.
expect_once() {  # expect_once PATTERN -- command...: exit 2, the error printed exactly once, naming no rank
  local pattern=$1 out n
  shift 2
  out=$("$@" 2>&1)
  [ $? -eq 2 ] || { echo "FAIL: '$*' did not exit 2"; echo "$out"; fail=1; return; }
  n=$(grep -c -- "tierzero: error: .*$pattern" <<<"$out")
  [ "$n" -eq 1 ] && ! grep -q "tierzero: rank [0-9]*:" <<<"$out" || { echo "FAIL: '$*' printed '$pattern' $n times"; echo "$out"; fail=1; return; }
  echo "ok: once: $*"
}
expect_once "has 12 ranks but the job has 8" -- run8 bench comm --topology package=2,node=2,world=3 --sizes 4096
expect_once "needs a multiple of 6 ranks" -- run8 bench comm --topology package=2,node=3 --sizes 4096
expect_once "unknown level 'rack'" -- run8 bench comm --topology rack=8 --sizes 4096
expect_once "must be a positive integer" -- run8 bench comm --topology package=two,world=4 --sizes 4096
expect_exit 2 "unknown dtype" 1 -- "$tz" bench comm --dtype fp8 --sizes 4096
expect_exit 2 "" 0 -- "$tz" bench nosuch
# Tensor parallelism: a degree that does not divide the ranks' level or the model's heads or key/value heads.
run4() { "$mpirun" --oversubscribe -np 4 "$tz" "$@"; }
expect_once "tp = 3 does not divide the world level's fan-out 4 (topology world=4)" -- run4 train --model gpt-tiny --steps 1 --tp 3 --topology world=4
expect_once "tp = 4 does not divide the 6 heads of model 'gpt-mini'" -- run4 train --model gpt-mini --steps 1 --tp 4
# A tensor level the job lacks: train says so once; simulate before any table, its only line.
expect_once "tp_level package: the job's topology node=4,world=1 has no such level" -- run4 train --model gpt-tiny --steps 1 --tp 2 --tp-level package --topology node=4
out=$("$tz" simulate --model gpt-tiny --system cpu --topology node=4 --ranks 4 --tp 2 --tp-level package 2>&1); rc=$?
[ $rc -eq 2 ] && [ "$out" = "tierzero: error: tp_level package: the job's topology node=4,world=1 has no such level" ] &&
  echo "ok: simulate --tp-level package on node=4: one line, exit 2" || { echo "FAIL: simulate with a missing tensor level (exit $rc): $out"; fail=1; }
# Sequence parallelism: only with a tensor-parallel group, whose degree divides the sequence.
expect_once "sp: sequence parallelism needs tp > 1 (tp = 1)" -- run4 train --model gpt-tiny --steps 1 --sp
expect_once "sp: tp = 4 does not divide the sequence length 30" -- run4 train --model gpt-tiny --steps 1 --tp 4 --sp --seq-len 30
expect_exit 2 "sp: tp = 4 does not divide the sequence length 30" 1 -- "$tz" simulate --model gpt-tiny --system cpu --topology node=4 --ranks 4 --tp 4 --sp --seq-len 30

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'GARBAGE!xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' > "$tmp/bad.bin"
expect_exit 2 "bad magic" 1 -- "$tz" train --data "$tmp/bad.bin" --steps 1
# Tensor parallelism splits the vocabulary's rows (unevenly where tp does not divide it), at least one per member.
printf 'preset = "gpt-tiny"\nvocab = 2\n' > "$tmp/two-tokens.toml"
expect_exit 2 "tp = 4 exceeds the vocabulary of 2 of model 'two-tokens'" 1 -- "$tz" simulate --model "$tmp/two-tokens.toml" --system cpu --topology node=4 --ranks 4 --tp 4
printf 'stepz = 3\n' > "$tmp/run.toml"
expect_exit 2 "unknown key 'stepz'" 1 -- "$tz" train --config "$tmp/run.toml"
# Values that would train wrongly with exit 0 are refused, naming the key and the file.
printf 'lr = inf\n' > "$tmp/inf.toml"
expect_exit 2 "inf.toml: lr must be a positive finite number" 1 -- "$tz" train --config "$tmp/inf.toml"
printf 'lr = nan\n' > "$tmp/nan.toml"
expect_exit 2 "nan.toml: lr must be a positive finite number" 1 -- "$tz" train --config "$tmp/nan.toml"
printf 'seed = -1\n' > "$tmp/seed.toml"
expect_exit 2 "seed.toml: key 'seed' must be at least 0, got -1" 1 -- "$tz" train --config "$tmp/seed.toml"
printf 'micro_batch = 1000000000000\n' > "$tmp/mb.toml"
expect_exit 2 "mb.toml: key 'micro_batch' must be between 1 and 2147483647" 1 -- "$tz" train --config "$tmp/mb.toml"
expect_exit 2 "\-\-lr: must be a finite number, got 'nan'" 1 -- "$tz" train --lr nan --steps 1
expect_exit 2 "\-\-lr: must be positive, got 0" 1 -- "$tz" train --lr 0 --steps 1
expect_exit 2 "\-\-steps: must be at least 1, got 0" 1 -- "$tz" train --steps 0
expect_exit 2 "\-\-micro-batch: must be at least 1, got 0" 1 -- "$tz" train --micro-batch 0
expect_exit 2 "\-\-micro-batch: must be at least 1, got 0" 1 -- "$tz" simulate --micro-batch 0
# Context parallelism: an engine without it, a degree the ranks cannot hold, a kind the engine does not run (exit 2, one line).
expect_exit 2 "the tierzero engine has no context parallelism (data/engines: context_parallel); use cp = 1" 1 -- "$tz" simulate --system dgx-h100 --model llama3-8b --ranks 16 --cp 2 --seq-len 4096
expect_exit 2 "tp 1 x pp 1 x cp 3 = 3 does not divide the job's 16 ranks" 1 -- "$tz" simulate --system dgx-h100 --engine megatron --model llama3-8b --ranks 16 --cp 3 --seq-len 4096 --strategy zero1
expect_exit 2 "the fsdp2 engine does not run a2a context parallelism (it runs ring; data/engines: context_parallel)" 1 -- "$tz" memory --system dgx-h100 --engine fsdp2 --model llama3-8b --ranks 16 --cp 2 --cp-kind a2a --seq-len 4096 --strategy zero3
# A pipeline's uneven split (--pp-split): a stage left without a layer (more stages than layers), layers that do not
# split evenly over the inner stages, ends that do not add up, an interleaved schedule, a name none of the forms.
expect_exit 2 "pipeline split ends:1,1: the 10 layers left of the model's 12 do not split evenly over the 14 other stages, at least 1 each" 1 -- "$tz" simulate --system dgx-h100 --engine megatron --model gpt2-124m --ranks 128 --pp 16 --pp-split ends:1,1 --strategy zero1
expect_exit 2 "pipeline split ends:2,1: the 29 layers left of the model's 32 do not split evenly over the 2 other stages, at least 1 each" 1 -- "$tz" simulate --system dgx-h100 --engine megatron --model llama3-8b --ranks 32 --pp 4 --pp-split ends:2,1 --strategy zero1
expect_exit 2 "pipeline split ends:10,20: the two stages hold 30 of the model's 32 layers" 1 -- "$tz" memory --system dgx-h100 --engine megatron --model llama3-8b --ranks 16 --pp 2 --pp-split ends:10,20 --strategy zero1
expect_exit 2 "pipeline split ends:16,16 with the interleaved schedule: only 1f1b splits the layers unevenly here (split even)" 1 -- "$tz" simulate --system dgx-h100 --engine megatron --model llama3-8b --ranks 16 --pp 2 --pp-schedule interleaved:2 --pp-split ends:16,16 --strategy zero1
expect_exit 2 "pipeline split embedding: pp = 4 does not divide the model's 32 layers + 2 (the embedding and the head counted as layers)" 1 -- "$tz" simulate --system dgx-h100 --engine megatron --model llama3-8b --ranks 32 --pp 4 --pp-split embedding --strategy zero1
expect_exit 2 "pipeline split 'ends:0,3': even, embedding, or ends:F,L (F and L >= 1 layers on the first and last stages)" 1 -- "$tz" simulate --system dgx-h100 --engine megatron --model llama3-8b --ranks 32 --pp 4 --pp-split ends:0,3 --strategy zero1
expect_exit 0 "pipeline of 4 stages on the world level (1f1b, layers split ends:1,1)" 1 -- "$tz" simulate --system dgx-h100 --engine megatron --model llama3-8b --ranks 32 --pp 4 --pp-split ends:1,1 --strategy zero1
expect_exit 2 "\-\-model-code: megatron-te not in {engine,fms,hf-transformers,megatron-lm-local,torchtitan}" 1 -- "$tz" simulate --model-code megatron-te
# A model code prices its norms and rotary embedding: the assumptions say it, the step is slower.
expect_exit 0 "engine fsdp, model code hf-transformers" 1 -- "$tz" simulate --system dgx-h100 --engine fsdp --model llama3-8b --ranks 8 --strategy zero3 --model-code hf-transformers
expect_exit 0 "engine fsdp, norms and rotary embedding as the engine's kernels (--model-code" 1 -- "$tz" simulate --system dgx-h100 --engine fsdp --model llama3-8b --ranks 8 --strategy zero3
# FSDP1's backward prefetch: post is said in the assumptions and is slower (its backward gathers exposed); other engines
# have no such setting.
expect_exit 0 "engine fsdp with backward prefetch post" 1 -- "$tz" simulate --system dgx-a100 --engine fsdp --model llama3-8b --ranks 64 --strategy zero3 --backward-prefetch post
expect_exit 2 "\-\-backward-prefetch is FSDP1's BackwardPrefetch: it needs \-\-engine fsdp (the deepspeed engine has no such setting)" 1 -- "$tz" simulate --engine deepspeed --backward-prefetch post
expect_exit 2 "\-\-backward-prefetch: early not in {pre,post}" 1 -- "$tz" simulate --engine fsdp --backward-prefetch early
step_s() { "$tz" simulate --system dgx-a100 --engine fsdp --model llama3-8b --ranks 64 --strategy zero3 --json "$@" 2>/dev/null | python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['step_time_s'])"; }
python3 -c "import sys; pre, post = map(float, sys.argv[1:]); assert post > pre, (pre, post)" "$(step_s --backward-prefetch pre)" "$(step_s --backward-prefetch post)" &&
  echo "ok: backward prefetch post is slower than pre" || { echo "FAIL: backward prefetch post not slower than pre"; fail=1; }
# A fit with less free than a block's allocation is at the memory limit: memory and simulate say so, and what to change;
# 200 tokens shorter it has room.
limit_args=(--system dgx-h100 --engine fsdp --model llama3-8b --ranks 8 --strategy zero3 --micro-batch 6 --recompute full)
expect_exit 0 "at the memory limit: 0.124 GB free, less than the largest allocation the step repeats for every block (1.24 GB)" 1 -- "$tz" memory "${limit_args[@]}" --seq-len 7200
expect_exit 0 "^zero3 .* limit .*79.9" 1 -- "$tz" simulate "${limit_args[@]}" --seq-len 7200
expect_exit 0 '"fits":true,"at_memory_limit":true' 1 -- "$tz" simulate "${limit_args[@]}" --seq-len 7200 --json
expect_exit 0 '"fits":true,"at_memory_limit":false' 1 -- "$tz" simulate "${limit_args[@]}" --seq-len 7000 --json
# simulate/memory/plan: --topology for systems that leave fan-outs open;
# scaling relative to the smallest rank count; plan changes said; latency
# and quantisation per level in the JSON.
expect_exit 2 "does not fix the fan-out of package, node; give --topology" 1 -- "$tz" simulate --system cpu --model gpt-mini --ranks 8
expect_exit 0 "fits" 1 -- "$tz" memory --system cpu --topology node=4 --model gpt-mini --ranks 8 --strategy zero3
# Offload: where no plan fits even with both states offloaded, the error says what takes the room; parameters
# are offloaded only from partitioned plans; train refuses the same.
expect_exit 2 "no plan fits llama3-70b on 64 ranks of dgx-h100 (24.0 GB per rank): the smallest, zero3 with recomputation and the optimizer and the parameters offloaded, needs 232.1 GB, 206.6 GB of it activations at micro-batch 4 and sequence 8192" 1 -- \
  "$tz" plan --model llama3-70b --system dgx-h100 --ranks 64 --memory-limit-gb 24 --seq-len 8192
expect_exit 0 "optim offload cpu)" 1 -- \
  "$tz" plan --model llama3-70b --system dgx-h100 --ranks 64 --memory-limit-gb 40 --micro-batch 1 --seq-len 2048 --top 1
expect_exit 2 "needs partitioned parameters (zero3, zeropp, mics, hier3); zero2 replicates them" 1 -- \
  "$tz" memory --model llama3-70b --system dgx-h100 --ranks 64 --strategy zero2 --offload-param cpu
expect_exit 0 "offloaded (optimizer none, parameters nvme)" 1 -- \
  "$tz" memory --model llama3-70b --system dgx-h100 --ranks 64 --strategy zeropp --offload-param nvme
expect_exit 2 "parameters can be offloaded only when they are partitioned" 1 -- \
  "$tz" train --model gpt-tiny --seq-len 32 --steps 1 --strategy zero2 --offload-param cpu
expect_exit 0 "exact" 1 -- "$tz" plan --system cpu --topology node=2 --model gpt-mini --ranks 4 --top 3
# The planner on a measured system: near-identical plans folded (and the
# folded ones differ from the listed one), the best against both engines.
expect_exit 0 "more within 0.5%" 1 -- "$tz" plan --system frontier-rccl --model gpt-20b --ranks 384
expect_exit 0 "tierzero with the best plan vs DeepSpeed's ZeRO++ here" 1 -- "$tz" plan --system frontier-rccl --model gpt-20b --ranks 384
python3 - <("$tz" plan --system frontier-rccl --model gpt-20b --ranks 384 --json 2>/dev/null) <<'PY' || fail=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
folded = [r for r in rows if r["alike"] > 0]
assert folded and all(r["alike_changes"] for r in folded), rows
best = rows[0]["tflops_per_device"]
for a in rows:
    for b in rows:  # two listed plans of one kind are more than 0.5% apart
        exact = lambda r: "weight bits 16" in r["plan"] and "grad bits package=16,node=16,world=16" in r["plan"]
        if a is not b and exact(a) == exact(b):
            assert abs(a["tflops_per_device"] / b["tflops_per_device"] - 1) > 0.0049, (a["plan"], b["plan"])
print("ok: plan on frontier-rccl: near-identical plans folded with what they change")
PY
# tierzero launch: needs --save-dir; bad input is not retried; a preempted run is rerun from its checkpoint.
expect_exit 2 "the command needs --save-dir DIR" 1 -- "$tz" launch -- "$tz" train --steps 2
expect_exit 2 "--requeue hands preempted runs to Slurm, but SLURM_JOB_ID is not set" 1 -- env -u SLURM_JOB_ID "$tz" launch --requeue -- "$tz" train --save-dir "$tmp/lq"
out=$("$tz" launch --max-restarts 3 --backoff 0 -- "$tz" train --steps 0 --save-dir "$tmp/l0" 2>&1); rc=$?
[ $rc -eq 2 ] && [ "$(grep -c 'tierzero launch: attempt [0-9]* of' <<<"$out")" -eq 1 ] && grep -q "exit 2: bad input (not retried)" <<<"$out" \
  && echo "ok: launch does not retry bad input" || { echo "FAIL: launch retried bad input (exit $rc)"; echo "$out"; fail=1; }
out=$(TIERZERO_FAULT_SIGNAL=1:3 "$tz" launch --backoff 0 -- "$mpirun" --oversubscribe -np 2 "$tz" train --model gpt-tiny --steps 6 \
  --strategy zero3 --save-dir "$tmp/l1" --save-every 100 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "attempt 1 ended after .* exit 75: preempted" <<<"$out" && grep -q -- "--resume latest" <<<"$out" &&
  grep -q "resumed after step 3" <<<"$out" && echo "ok: launch reruns a preempted run from its checkpoint" ||
  { echo "FAIL: launch after a preemption (exit $rc)"; echo "$out"; fail=1; }
# A preemption notice while the processes are still starting (before any library's initialiser has run
# it is recorded, early_signals.h): train saves after its first step and exits 75 on every rank; other
# commands keep the default action; the launcher stops before starting the command.
out=$(TIERZERO_FAULT_EARLY_SIGNAL=1 "$mpirun" --oversubscribe -np 2 "$tz" train --model gpt-tiny --steps 6 --strategy zero3 \
  --save-dir "$tmp/e1" --log-every 100000 2>&1); rc=$?
[ $rc -eq 75 ] && grep -q "preempted (a rank received SIGTERM, SIGUSR1 or SIGINT, or found mpirun gone) after step 1: saved $tmp/e1/step-00000001;" <<<"$out" && [ -d "$tmp/e1/step-00000001" ] &&
  echo "ok: a notice during start-up: train saves after step 1 and exits 75" || { echo "FAIL: early notice to train (exit $rc)"; echo "$out"; fail=1; }
TIERZERO_FAULT_EARLY_SIGNAL=1 "$tz" bench quant --elements 1000 >/dev/null 2>&1; rc=$?
[ $rc -eq 138 ] && echo "ok: a notice during start-up ends other commands (SIGUSR1's default action)" ||
  { echo "FAIL: early notice to bench (exit $rc, expected 138)"; fail=1; }
out=$(TIERZERO_FAULT_EARLY_SIGNAL=1 "$tz" launch --backoff 0 -- "$tz" train --model gpt-tiny --steps 6 --save-dir "$tmp/e2" 2>&1); rc=$?
[ $rc -eq 138 ] && grep -q "stopping before attempt 1: the launcher received signal 10" <<<"$out" && ! grep -q "attempt 1 of" <<<"$out" &&
  echo "ok: a notice during the launcher's start-up: it stops before starting the command" ||
  { echo "FAIL: early notice to launch (exit $rc)"; echo "$out"; fail=1; }
# One collective priced flat and decomposed; bad kinds and sizes refused.
expect_exit 0 "two_level_ms" 1 -- "$tz" collective --system frontier-rccl --ranks 16,64 --total-mib 16
expect_exit 2 "\-\-collective must be all_gather or reduce_scatter" 1 -- "$tz" collective --collective all_to_all
expect_exit 2 "unknown collective 'gather'" 1 -- "$tz" collective --collective gather
expect_exit 2 "is under a byte per rank" 1 -- "$tz" collective --ranks 1024 --total-mib 0.0001
expect_exit 2 "has 8 ranks per node; 12 ranks is not a multiple" 1 -- "$tz" collective --system frontier-rccl --ranks 12
python3 - <(cd "$tmp" && "$tz" simulate --ranks 384,8 --strategy hier3 --model gpt-18b --micro-batch 1 --seq-len 1024 --json) <<'PY' || fail=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["ranks"] for r in rows] == [8, 384], rows
assert rows[0]["scaling_efficiency"] == 1.0, rows
assert abs(rows[1]["scaling_efficiency"] - rows[1]["tflops_per_device"] / rows[0]["tflops_per_device"]) < 1e-12, rows
assert rows[0]["plan_changed"] and "package" in rows[0]["plan_changed"] and rows[1]["plan_changed"] is None, rows
for key in ("comm_time_s", "latency_s", "quant_s"):
    assert set(rows[1][key]) == {"package", "node", "world"}, rows[1][key]
assert rows[1]["latency_s"]["world"] > 0 and rows[1]["quant_s"]["world"] > 0, rows[1]
print("ok: simulate: scaling from the smallest rank count, plan change said, latency and quantisation per level")
PY
expect_exit 2 "unknown command 'nosuch'; the commands are bench, train" 1 -- "$tz" nosuch
# A DeepSpeed config gives way to explicit flags (2 sequences of 16 tokens, not 4), and its "auto" keys are named.
printf '{"train_micro_batch_size_per_gpu": 4, "gradient_clipping": "auto", "zero_optimization": {"stage": 3}}' > "$tmp/ds.json"
expect_exit 0 'set to "auto" take tierzero.s values (flags, --config, defaults): gradient_clipping' 1 -- "$tz" train --deepspeed-config "$tmp/ds.json" \
  --micro-batch 2 --seq-len 16 --steps 1 --metrics "$tmp/ds.jsonl"
python3 -c "import json; t=json.loads(open('$tmp/ds.jsonl').readline())['tokens']; assert t == 32, t" && echo "ok: flags win over the DeepSpeed config" || { echo "FAIL: flags vs DeepSpeed"; fail=1; }
printf '{"zero_optimization": {"stage": 2.7}}' > "$tmp/ds27.json"
expect_exit 2 "ds27.json: 'zero_optimization.stage' must be a whole number, got 2.7" 1 -- "$tz" train --deepspeed-config "$tmp/ds27.json" --steps 1
expect_once "ds27.json: 'zero_optimization.stage' must be a whole number, got 2.7" -- run8 train --deepspeed-config "$tmp/ds27.json" --steps 1
expect_exit 2 "\-\-resume latest needs \-\-save-dir" 1 -- "$tz" train --strategy ddp --resume latest --steps 1
expect_exit 2 "unknown model 'gpt-huge'" 1 -- "$tz" train --model gpt-huge
if ! nvidia-smi -L >/dev/null 2>&1; then  # without a GPU: a CPU build or a CUDA build says why --device cuda cannot run
  expect_exit 2 "built without CUDA and NCCL\|needs a GPU on every rank" 1 -- "$tz" train --device cuda --model gpt-tiny --steps 1
fi
expect_exit 2 "not in {cpu,cuda}" 1 -- "$tz" train --device tpu --steps 1
expect_exit 0 "done: 2 steps" 1 -- run8 train --strategy hier3 --topology package=2,node=2,world=2 --steps 2 --save-dir "$tmp/order" \
  --save-every 1 --val-fraction 0.05 --eval-every 1 --check-comm-order  # checked after every step, validation and checkpoint included
# A checkpoint whose meta.json names a file outside its folder, or whose `latest` names anything but a step folder
# beside it, is refused before any file is opened (ckpt verify used to report ../../secret.txt's CRC).
cp -r "$tmp/order" "$tmp/esc" && printf 'secret' > "$tmp/secret.txt"
python3 - "$tmp/esc/step-00000002/meta.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["files"] = {("../../secret.txt" if i == 0 else n): f for i, (n, f) in enumerate(m["files"].items())}
json.dump(m, open(sys.argv[1], "w"))
PY
expect_exit 2 "step-00000002/meta.json: file name '../../secret.txt' leaves the checkpoint's folder" 1 -- "$tz" ckpt verify "$tmp/esc"
expect_exit 2 "file name '../../secret.txt' leaves" 1 -- "$tz" ckpt export "$tmp/esc/step-00000002" --safetensors "$tmp/esc.safetensors"
printf '../order/step-00000002\n' > "$tmp/esc/latest"
expect_exit 2 "esc/latest' names '../order/step-00000002', which is not a step folder beside it" 1 -- "$tz" ckpt inspect "$tmp/esc"
expect_exit 2 "esc/latest' names '../order/step-00000002', which is not a step folder beside it" 1 -- "$tz" train --strategy ddp \
  --save-dir "$tmp/esc" --resume latest --steps 3
for bad in nan inf -1; do  # would have disabled the deadline silently
  expect_exit 2 "comm-timeout: must be a finite number\|comm-timeout: must be at least 0" 1 -- "$tz" train --strategy zero3 --comm-timeout "$bad" --steps 1
done
expect_exit 2 "cannot open" 1 -- "$tz" train --data "$tmp/none.bin" --steps 1
# llm.c / nanoGPT shards train directly; GPT-2 ids in a byte-level model are refused.
python3 -c "
import struct, sys
def shard(path, ids): open(path, 'wb').write(struct.pack('<256i', 20240520, 1, len(ids), *[0] * 253) + struct.pack('<%dH' % len(ids), *ids))
shard('$tmp/bytes.bin', [ord(c) for c in 'In the beginning God created the heaven and the earth. ' * 40])
shard('$tmp/gpt2.bin', [15496, 11, 995, 50256] * 100)"
expect_exit 0 "done: 2 steps" 1 -- "$tz" train --data "$tmp/bytes.bin" --steps 2 --micro-batch 2 --seq-len 16
expect_exit 2 "has vocabulary 50257 but the model's is 256" 1 -- "$tz" train --data "$tmp/gpt2.bin" --steps 1
# Validation: the held-out loss in the log and the metrics, the same under every strategy.
for s in zero3 ddp; do
  expect_exit 0 "step 2/2 val_loss" 1 -- "$mpirun" --oversubscribe -np 4 "$tz" train --strategy "$s" --steps 2 --micro-batch 2 --seq-len 32 \
    --val-fraction 0.05 --eval-every 1 --eval-batches 3 --metrics "$tmp/val-$s.jsonl"
done
python3 -c "
import json
v = {s: [json.loads(l)['val_loss'] for l in open('$tmp/val-%s.jsonl' % s)] for s in ('zero3', 'ddp')}
assert len(v['zero3']) == 2 and all(abs(a - b) < 1e-5 * a for a, b in zip(v['zero3'], v['ddp'])), v" \
  && echo "ok: validation loss in the metrics, zero3 = ddp" || { echo "FAIL: validation loss"; fail=1; }
expect_exit 2 "val_fraction must be in \[0, 0.5\]" 1 -- "$tz" train --val-fraction 0.9 --steps 1
printf 'hello world, hello tierzero. ' > "$tmp/t.txt"
for i in 1 2 3 4 5 6; do cat "$tmp/t.txt" "$tmp/t.txt" > "$tmp/t2.txt"; mv "$tmp/t2.txt" "$tmp/t.txt"; done
expect_exit 0 "wrote" 1 -- "$tz" data prepare --input "$tmp/t.txt" --output "$tmp/t.bin"
expect_exit 0 "done: 2 steps" 1 -- "$tz" train --data "$tmp/t.bin" --steps 2 --micro-batch 2 --seq-len 16 --metrics "$tmp/m.jsonl"
python3 - "$tmp/m.jsonl" <<'PY' || fail=1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["step"] for l in lines] == [1, 2], lines
for l in lines:
    assert {"step", "loss", "lr", "tokens_per_s", "tflops"} <= set(l), l
print("ok: metrics JSONL")
PY
# GPT-2 BPE data: a toy ranks file (256 bytes + 44 merges, vocabulary 301)
# stands for OpenAI's; bad tokenizer input and a vocabulary the model
# cannot hold are clear errors, exit 2.
python3 - "$tmp/toy.tiktoken" <<'PY'
import base64, sys
merges = [b"he", b"ll", b"hell", b"hello", b" w", b"or", b" wor", b"ld", b" world"] + [bytes([65 + i, 66 + i]) for i in range(35)]
with open(sys.argv[1], "w") as f:
    for i, t in enumerate([bytes([b]) for b in range(256)] + merges):
        f.write(base64.b64encode(t).decode() + " " + str(i) + "\n")
PY
expect_exit 0 "wrote 3 tokens (vocabulary 301)" 1 -- "$tz" data prepare --tokenizer gpt2 --tokenizer-dir "$tmp/toy.tiktoken" \
  --input <(printf 'hello') --input <(printf ' world') --output "$tmp/bpe.bin"
expect_exit 2 "needs --tokenizer-dir" 1 -- "$tz" data prepare --tokenizer gpt2 --input "$tmp/t.txt" --output "$tmp/x.bin"
expect_exit 2 "no tokenizer files at '$tmp/none'" 1 -- "$tz" data prepare --tokenizer gpt2 --tokenizer-dir "$tmp/none" \
  --input "$tmp/t.txt" --output "$tmp/x.bin"
printf 'ok \xff' > "$tmp/latin1.txt"
expect_exit 2 "input '$tmp/latin1.txt': text is not valid UTF-8 at byte 3" 1 -- "$tz" data prepare --tokenizer gpt2 \
  --tokenizer-dir "$tmp/toy.tiktoken" --input "$tmp/latin1.txt" --output "$tmp/x.bin"
mkdir -p "$tmp/wp" && printf '{"model": {"type": "WordPiece", "vocab": {}}}' > "$tmp/wp/tokenizer.json"
expect_exit 2 "tokenizer.json': model type 'WordPiece' is not supported" 1 -- "$tz" data prepare --tokenizer-file "$tmp/wp" --input "$tmp/t.txt" --output "$tmp/x.bin"
printf '{"model": {"type": "Unigram", "vocab": [["a", 0.0]]}}' > "$tmp/wp/tokenizer.json"
expect_exit 2 "tokenizer.json': model type 'Unigram' is not supported" 1 -- "$tz" sample --checkpoint "$tmp/none" --tokenizer-file "$tmp/wp"
[ ! -e "$tmp/x.bin" ] && echo "ok: nothing written on bad input" || { echo "FAIL: $tmp/x.bin written"; fail=1; }
"$tz" data prepare --tokenizer gpt2 --tokenizer-dir "$tmp/toy.tiktoken" --input "$tmp/t.txt" --output "$tmp/bpe.bin" 2>/dev/null
expect_exit 2 "has vocabulary 301 but the model's is 256" 1 -- "$tz" train --data "$tmp/bpe.bin" --steps 1 --seq-len 16 --micro-batch 1
# A Megatron-LM indexed dataset (PREFIX.bin + PREFIX.idx) trains; an index
# that does not match its .bin is exit 2, naming both.
python3 - "$tmp/t.txt" "$tmp/mega" <<'PY'
import struct, sys
text = open(sys.argv[1], "rb").read()
docs = [text[i:i + 500] for i in range(0, len(text), 500)]
with open(sys.argv[2] + ".bin", "wb") as f:
    for d in docs:
        f.write(struct.pack(f"<{len(d)}H", *d))
idx = b"MMIDIDX\0\0" + struct.pack("<QBQQ", 1, 8, len(docs), len(docs) + 1)
idx += b"".join(struct.pack("<i", len(d)) for d in docs)
pointer = 0
for d in docs:
    idx += struct.pack("<q", pointer)
    pointer += 2 * len(d)
idx += b"".join(struct.pack("<q", i) for i in range(len(docs) + 1))
open(sys.argv[2] + ".idx", "wb").write(idx)
PY
expect_exit 0 "done: 2 steps" 1 -- "$tz" train --data "$tmp/mega" --steps 2 --micro-batch 2 --seq-len 16
truncate -s -2 "$tmp/mega.bin"
expect_exit 2 "does not match its .bin" 1 -- "$tz" train --data "$tmp/mega.bin" --steps 2 --micro-batch 2 --seq-len 16

json=$(run8 bench comm --topology package=2,node=2,world=2 --sizes 65536 --iters 1 --hop-chunk-bytes 1024 --json 2>/dev/null)
python3 - "$json" <<'PY' || fail=1
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
ag = {r["algorithm"]: r for r in rows if r["collective"] == "all_gather"}
M, W, per_node = 65536, 8, 4
flat, hier = ag["flat"]["bytes_per_level"]["world"], ag["hier"]["bytes_per_level"]["world"]
assert flat == M * (W - W // 2) / W, flat        # every shard of the other node
assert hier == M / W * (2 - 1), hier             # one shard from the peer node
assert flat == per_node * hier
for r in rows:
    assert set(r) >= {"collective", "algorithm", "bytes", "time_s", "algbw_gbs", "bytes_per_level"}, r
    # Each hop's time alone beside the hierarchical rows, by level, innermost first; none beside the flat ones.
    if r["algorithm"] == "flat":
        assert "hop_time_s" not in r, r
    else:
        assert list(r["hop_time_s"]) == ["package", "node", "world"] and min(r["hop_time_s"].values()) > 0, r
# A pipelined row (8 KiB shards in 1 KiB chunks) sits beside its hierarchical one with the same hops alone, and says
# its result was the hierarchical one's bit for bit; no other row says so.
for c in ("all_gather", "reduce_scatter"):
    by = {r["algorithm"]: r for r in rows if r["collective"] == c}
    assert by["pipelined"]["hop_time_s"] == by["hier"]["hop_time_s"], by
    assert by["pipelined"]["equal_to_hier"] is True, by["pipelined"]
assert [r["algorithm"] for r in rows if "equal_to_hier" in r] == ["pipelined", "pipelined"], rows
print("ok: bench comm JSON (world bytes flat", flat, "hier", hier, ")")
PY

# A measured system file, read back by the simulator: every figure in range,
# Open MPI's collectives, and a prediction for the job that measured it.
"$mpirun" --oversubscribe -np 4 "$tz" bench comm --topology package=2,world=2 --sizes 4096 --iters 1 --write-system "$tmp/sys.toml" \
  --calibrate-model gpt-tiny --calibrate-seq-len 32 > /dev/null 2>&1 || { echo "FAIL: bench comm --write-system"; fail=1; }
sim=$("$tz" simulate --system "$tmp/sys.toml" --model gpt-tiny --ranks 4 --seq-len 32 --micro-batch 1 --strategy zero3,hier3 --json)
python3 - "$tmp/sys.toml" "$sim" <<'PY' || fail=1
import json, re, sys, tomllib
s = tomllib.load(open(sys.argv[1], "rb"))
assert s["collectives"] == "mpi", s
assert 0 < s["device"]["gemm_efficiency"] <= 1 and 0 <= s["overlap_forward"] == s["overlap_backward"] <= 1 and 0 <= s["overlap_reduce"] <= 1 and s["peak_tflops"] > 0, s
assert [l["name"] for l in s["level"]] == ["package", "world"], s
# The 4 ranks share this machine's cores: a rank's memory bandwidth is the cpu device's 14.5 GB/s over the ranks per core.
import os
per_core = max(1.0, 4 / len(os.sched_getaffinity(0)))
assert abs(s["memory_bandwidth_gbs"] - 14.5 / per_core) < 1e-9 and f"{per_core:.3g} ranks that share each core" in s["memory_bandwidth_gbs_source"], s
for l in s["level"]:
    assert l["bandwidth_gbs"] > 0 and l["latency_us"] > 0 and l["source"].startswith("measured"), l
    # One achieved-rate point per measured shard size among the level's group, and among its hop group where smaller.
    points = l["achieved"]
    assert all(p["bandwidth_gbs"] > 0 and p["bytes"] in (262144, 524288) for p in points), points
    assert sorted(p["participants"] for p in points) == ([2, 2] if l["name"] == "package" else [2, 2, 4, 4]), points
rows = [json.loads(l) for l in sys.argv[2].splitlines()]
assert [r["strategy"] for r in rows] == ["zero3", "hier3"], rows
for r in rows:
    assert r["step_time_s"] > r["compute_time_s"] > 0 and r["fits"], r
print("ok: measured system file, simulated step", rows[0]["step_time_s"], "s")
# Each figure's source says how it was measured here (the command, the 4 ranks, the threads), or that it was not.
job = "tierzero bench comm --write-system on 4 ranks (package=2,world=2), 1 GEMM thread per rank, "
measured = {"memory_gb": s, "peak_tflops": s, "gemm_efficiency": s["device"]}
for key, table in measured.items():
    src = table[key + "_source"]
    assert src.startswith("measured: ") and job in src and "assumed" not in src and "preset" not in src, (key, src)
host = float(re.search(r"physical memory \(([0-9.]+) GB", s["memory_gb_source"]).group(1))
assert "over its 2 ranks" in s["memory_gb_source"] and abs(s["memory_gb"] - host / 2) < 1e-3, (s["memory_gb"], s["memory_gb_source"])
assert re.search(r"384x384x384 (fp32|bf16) GEMMs", s["peak_tflops_source"]), s["peak_tflops_source"]
others = {k: v for k, v in list(s.items()) + list(s["device"].items()) if k.endswith("_source") and k[:-7] not in measured}
assert others and all(v.startswith("not measured here: the cpu preset's (") for v in others.values()), others
print("ok: the measured system's sources: measured here for", sorted(measured), "; the cpu preset's for", sorted(k[:-7] for k in others))
PY
exit $fail
