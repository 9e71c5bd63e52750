#!/usr/bin/env bash
# The DeepSpeed user's walkthrough (docs/deepspeed.md) at small scale: a
# ds_config.json with a scheduler and no --steps trains for the scheduler's
# total_num_steps, its batch by DeepSpeed's rule, each step's learning rate
# DeepSpeed's WarmupDecayLR (computed here from lr_schedules.py's formula);
# the keys it leaves out take DeepSpeed's defaults (the same losses, bit for
# bit, as a config that spells them out; other losses with tierzero's own
# values); a shorter --steps warns that the warmup is longer than the run; a
# batch that does not add up is exit 2.
# Usage: deepspeed_walkthrough_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/script_lib.sh"
run() { "$mpirun" --oversubscribe -np 4 "$tz" train --model gpt-tiny --seq-len 32 --log-every 100 "$@"; }
config() {  # config FILE EXTRA_JSON: the walkthrough's config with EXTRA's keys merged in
  python3 - "$1" "$2" <<'PY'
import json, sys
c = {"train_batch_size": 16, "gradient_accumulation_steps": 2, "bf16": {"enabled": True},
     "zero_optimization": {"stage": 3, "overlap_comm": True, "contiguous_gradients": True, "stage3_max_live_parameters": 1e9},
     "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.01}},
     "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-3, "warmup_num_steps": 3, "total_num_steps": 8}},
     "steps_per_print": 10}
extra = json.loads(sys.argv[2])
for k, v in extra.items():
    if isinstance(v, dict): c.setdefault(k, {}).setdefault("params", {}).update(v.get("params", {}))
    else: c[k] = v
json.dump(c, open(sys.argv[1], "w"), indent=1)
PY
}
config "$tmp/ds_config.json" '{}'
# 1. No --steps: 8 steps (total_num_steps), micro batch 2 (16 / 4 ranks / 2), DeepSpeed's defaults said.
run --deepspeed-config "$tmp/ds_config.json" --metrics "$tmp/a.jsonl" >"$tmp/log" 2>&1 || { tail -5 "$tmp/log"; bad "the walkthrough's run"; }
grep -q "DeepSpeed config: 8 steps (scheduler.params.total_num_steps), micro batch 2 x accumulation 2 x 4 ranks, AdamW peak lr 0.003 betas (0.9, 0.999) eps 1e-08 weight decay 0.01, gradient clipping off, bf16 parameters" "$tmp/log" &&
  grep -q "warning: DeepSpeed keys not implemented and ignored: .*zero_optimization.contiguous_gradients (gradients are always packed" "$tmp/log" &&
  ok "the run says what the config means: 8 steps from total_num_steps, the batch by DeepSpeed's rule, DeepSpeed's defaults" ||
  { cat "$tmp/log"; bad "the run's notes"; }
python3 - "$tmp/a.jsonl" <<'PY' && ok "8 steps of 16 x 32 tokens; every step's rate is DeepSpeed's WarmupDecayLR" || bad "steps, tokens or rates"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == list(range(8)), [r["step"] for r in rows]
assert all(r["tokens"] == 16 * 32 for r in rows), rows[0]["tokens"]
# deepspeed/runtime/lr_schedules.py WarmupDecayLR, last_batch_iteration s = step - 1 (the engine steps the scheduler after
# the optimizer; the constructor sets step 0's rate to warmup_min_lr).
lo, hi, W, T = 0.0, 3e-3, max(2, 3), 8
def rate(s):
    if s < W:
        return lo + (hi - lo) * math.log(s + 1) / math.log(W)
    return lo + (hi - lo) * max(0.0, (T - s) / max(1.0, T - W))
want = [lo] + [rate(k - 1) for k in range(1, 8)]
got = [r["lr"] for r in rows]
assert all(abs(g - w) <= 1e-6 * hi for g, w in zip(got, want)), (got, want)
PY
# 2. The keys left out are DeepSpeed's defaults: spelling them out changes nothing; tierzero's own values change the losses.
config "$tmp/explicit.json" '{"gradient_clipping": 0.0, "optimizer": {"params": {"betas": [0.9, 0.999], "eps": 1e-8}}}'
config "$tmp/tierzero.json" '{"gradient_clipping": 1.0, "optimizer": {"params": {"betas": [0.9, 0.95], "weight_decay": 0.1}}}'
run --deepspeed-config "$tmp/explicit.json" --metrics "$tmp/b.jsonl" >/dev/null 2>&1 &&
  run --deepspeed-config "$tmp/tierzero.json" --metrics "$tmp/c.jsonl" >/dev/null 2>&1 || bad "the runs that spell the keys out"
python3 - "$tmp/a.jsonl" "$tmp/b.jsonl" "$tmp/c.jsonl" <<'PY' && ok "left-out keys = DeepSpeed's defaults, bit for bit; tierzero's values give other losses" || bad "defaults"
import json, sys
a, b, c = ([json.loads(l)["loss"] for l in open(p)] for p in sys.argv[1:4])
assert a == b, (a, b)
assert len(c) == len(a) and c != a, (a, c)
PY
# 3. --steps wins over total_num_steps; a warmup longer than the run is a warning.
out=$(run --deepspeed-config "$tmp/ds_config.json" --steps 2 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "warning: $tmp/ds_config.json: 'scheduler.params.warmup_num_steps' 3 is longer than the run (2 steps)" <<<"$out" &&
  grep -q "done: 2 steps" <<<"$out" && ok "--steps 2: a warning that the warmup is longer than the run" || { echo "$out" | tail -5; bad "warmup warning"; }
# 4. A batch that does not add up: exit 2, naming the file and the numbers.
config "$tmp/bad.json" '{"train_batch_size": 20}'
out=$(run --deepspeed-config "$tmp/bad.json" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "bad.json: 'train_batch_size' is 20 but micro batch 2 x accumulation 2 x 4 ranks is 16" <<<"$out" &&
  ok "a batch that does not add up: exit 2" || { echo "$out" | tail -3; bad "batch check (exit $rc)"; }
[ $fail -eq 0 ] && echo "deepspeed_walkthrough: all passed"
exit $fail
