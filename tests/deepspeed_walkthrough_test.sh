#!/usr/bin/env bash
# The DeepSpeed user's walkthrough (docs/deepspeed.md), its commands run as
# the page gives them (walkthrough_lib.sh): a ds_config.json with a
# scheduler and no --steps trains for the scheduler's total_num_steps (200),
# its batch by DeepSpeed's rule, each step's learning rate DeepSpeed's
# WarmupDecayLR (computed here from lr_schedules.py's formula), saving at
# steps 100 and 200; a shorter --steps warns that the warmup is longer than
# the run. Then, from the page's ds_config.json at a smaller scale (8
# steps, sequence 32): the keys it leaves out take DeepSpeed's defaults (the
# same losses, bit for bit, as a config that spells them out; other losses
# with tierzero's own values); a batch that does not add up is exit 2.
# Usage: deepspeed_walkthrough_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/script_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/walkthrough_lib.sh"
page=$(dirname "${BASH_SOURCE[0]}")/../docs/deepspeed.md
w=$tmp/walk
# 1. The page's commands, as written.
run_walkthrough "$page" "$w" && ok "docs/deepspeed.md's commands run as written" || { tail -5 "$w/walkthrough.log"; bad "the page's commands"; }
grep -q "DeepSpeed config: 200 steps (scheduler.params.total_num_steps), micro batch 2 x accumulation 2 x 4 ranks, AdamW peak lr 0.003 betas (0.9, 0.999) eps 1e-08 weight decay 0.01, gradient clipping off, bf16 parameters" "$w/walkthrough.log" &&
  grep -q "warning: DeepSpeed keys not implemented and ignored: steps_per_print (--log-every sets how often a step is printed), zero_optimization.contiguous_gradients (gradients are always packed" "$w/walkthrough.log" &&
  grep -q "^step 1/200 loss [0-9.]* lr 0 grad_norm" "$w/walkthrough.log" &&
  ok "the run says what the config means: 200 steps from total_num_steps, the batch by DeepSpeed's rule, DeepSpeed's defaults" ||
  bad "the run's notes"
grep -q "warning: ds_config.json: 'scheduler.params.warmup_num_steps' 30 is longer than the run (20 steps): the learning rate never reaches its peak" "$w/walkthrough.log" &&
  grep -q "the schedule ends at scheduler.params.total_num_steps 200; --steps runs 20" "$w/walkthrough.log" &&
  ok "--steps 20: a warning that the warmup is longer than the run" || bad "warmup warning"
[ "$(ls "$w/ckpt" | grep step- | tr '\n' ' ')" = "step-00000100 step-00000200 " ] && [ "$(cat "$w/ckpt/latest")" = step-00000200 ] &&
  ok "checkpoints after steps 100 and 200" || bad "checkpoints: $(ls "$w/ckpt" | tr '\n' ' ')"
python3 - "$w/m.jsonl" <<'PY' && ok "steps 1-200 of 16 sequences; every step's rate is DeepSpeed's WarmupDecayLR" || bad "steps, tokens or rates"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == list(range(1, 201)), [r["step"] for r in rows][:5]
assert all(r["tokens"] == 16 * 64 for r in rows), rows[0]["tokens"]  # gpt-tiny's context: 64 tokens
# deepspeed/runtime/lr_schedules.py WarmupDecayLR at last_batch_iteration s: the engine steps the scheduler after the
# optimizer, so step k (from 1) runs at s = k - 2, and step 1 at the rate the constructor sets (warmup_min_lr).
lo, hi, W, T = 0.0, 3e-3, max(2, 30), 200
def rate(s):
    if s < W:
        return lo + (hi - lo) * math.log(s + 1) / math.log(W)
    return lo + (hi - lo) * max(0.0, (T - s) / max(1.0, T - W))
want = {k: lo if k == 1 else rate(k - 2) for k in range(1, 201)}
bad = [(r["step"], r["lr"], want[r["step"]]) for r in rows if abs(r["lr"] - want[r["step"]]) > 1e-6 * hi]
assert not bad, bad[:5]
PY
run() { "$mpirun" --oversubscribe -np 4 "$tz" train --model gpt-tiny --seq-len 32 --log-every 100 "$@"; }
config() {  # config FILE EXTRA_JSON: the page's ds_config.json, 8 steps with a warmup of 3, EXTRA's keys merged in
  python3 - "$w/ds_config.json" "$1" "$2" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["scheduler"]["params"].update({"warmup_num_steps": 3, "total_num_steps": 8})
extra = json.loads(sys.argv[3])
for k, v in extra.items():
    if isinstance(v, dict): c.setdefault(k, {}).setdefault("params", {}).update(v.get("params", {}))
    else: c[k] = v
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
}
config "$tmp/ds_config.json" '{}'
run --deepspeed-config "$tmp/ds_config.json" --metrics "$tmp/a.jsonl" >"$tmp/log" 2>&1 || { tail -5 "$tmp/log"; bad "the 8-step run"; }
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
# 3. A batch that does not add up: exit 2, naming the file and the numbers.
config "$tmp/bad.json" '{"train_batch_size": 20}'
out=$(run --deepspeed-config "$tmp/bad.json" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "bad.json: 'train_batch_size' is 20 but micro batch 2 x accumulation 2 x 4 ranks is 16" <<<"$out" &&
  ok "a batch that does not add up: exit 2" || { echo "$out" | tail -3; bad "batch check (exit $rc)"; }
[ $fail -eq 0 ] && echo "deepspeed_walkthrough: all passed"
exit $fail
