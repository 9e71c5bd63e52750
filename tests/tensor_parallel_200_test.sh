#!/usr/bin/env bash
# Issue 52's acceptance over 200 steps: tensor-parallel training on 8 ranks
# against the same plan at TP 1 on the data-parallel ranks alone (the same
# batches, so the same run but for the split); llama-tiny at TP 4 shares each
# of its 2 key/value heads between 2 members.
#  exact plans (zero3): every step's loss within 1e-4 relative of TP 1's
#    (fp32 parameters; what is left is the order of fp32 sums, which the
#    steps after the warmup amplify and the later ones damp again: at most
#    8.4e-7 measured, at step 58 with TP 4 and SP; 1.25e-5 there while the
#    head was still whole on every member);
#    with the group's sum of the norms' weight gradients dropped, TP 4
#    with SP is off by 2.4e-2 at step 44);
#  quantised plans (zeropp, hier3): a member quantises its own slices, so the
#    blocks and their rounding differ from TP 1's from step 1 (9e-6); these
#    must train as well: the mean loss of the last 50 steps within 2% of TP 1's
#    (0.15% and 0.36% measured).
# The peak learning rate is 1e-3: at the default 3e-3 gpt-tiny's loss spikes
# after the warmup and any rounding difference grows chaotically (1.5e-2
# between two exact runs at step 109), which would test the chaos, not the
# split. Usage: tensor_parallel_200_test.sh TIERZERO MPIEXEC
set -u
tz=$(realpath "$1")
mpiexec=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
common=(--seq-len 32 --param-dtype fp32 --steps 200 --lr 1e-3 --log-every 1000)

# train NAME RANKS ARGS...: NAME's metrics in $work/NAME.jsonl.
train() {
  local name=$1 np=$2
  shift 2
  "$mpiexec" --oversubscribe -np "$np" "$tz" train "${common[@]}" "$@" --metrics "$work/$name.jsonl" >"$work/$name.log" 2>&1 ||
    { echo "FAIL: $name: $(tail -n 3 "$work/$name.log")"; fail=1; }
}

# compare KIND RUN REFERENCE: exact (every step within 1e-4 relative) or mean (the last 50 steps' mean within 2%).
compare() {
  python3 - "$@" "$work" <<'PY' || fail=1
import json, sys
kind, run, ref, work = sys.argv[1:5]
rows = lambda n: [json.loads(line) for line in open(f"{work}/{n}.jsonl")]
a, b = rows(run), rows(ref)
if [r["step"] for r in a] != list(range(1, 201)) or len(b) != 200:
    sys.exit(f"FAIL: {run}: {len(a)} rows against {ref}'s {len(b)}, not steps 1..200")
if kind == "exact":
    worst = max((abs(x["loss"] - y["loss"]) / abs(y["loss"]), x["step"]) for x, y in zip(a, b))
    ok = worst[0] <= 1e-4
    print(f"{'ok' if ok else 'FAIL'}: {run} against {ref}: largest relative loss difference {worst[0]:.2e} (step {worst[1]}), bound 1e-4")
else:
    ma, mb = (sum(r["loss"] for r in x[-50:]) / 50 for x in (a, b))
    ok = abs(ma - mb) <= 0.02 * mb
    print(f"{'ok' if ok else 'FAIL'}: {run} against {ref}: mean loss of the last 50 steps {ma:.4f} against {mb:.4f} ({(ma - mb) / mb:+.2%}), bound 2%")
sys.exit(0 if ok else 1)
PY
}

gpt=(--model gpt-tiny)
llama=(--model llama-tiny)
tp2=(--topology package=2,node=2,world=2 --tp 2 --tp-level package)
tp4=(--topology package=4,world=2 --tp 4 --tp-level package)
dp4=(--topology node=2,world=2)
dp2=(--topology world=2)

train gpt_zero3_dp4 4 "${gpt[@]}" --strategy zero3 "${dp4[@]}"
train gpt_zero3_tp2 8 "${gpt[@]}" --strategy zero3 "${tp2[@]}"
train gpt_zero3_dp2 2 "${gpt[@]}" --strategy zero3 "${dp2[@]}"
train gpt_zero3_tp4_sp 8 "${gpt[@]}" --strategy zero3 "${tp4[@]}" --sp
train llama_zero3_dp4 4 "${llama[@]}" --strategy zero3 "${dp4[@]}"
train llama_zero3_tp2_sp 8 "${llama[@]}" --strategy zero3 "${tp2[@]}" --sp
train llama_zero3_dp2 2 "${llama[@]}" --strategy zero3 "${dp2[@]}"
train llama_zero3_tp4 8 "${llama[@]}" --strategy zero3 "${tp4[@]}"
train gpt_zeropp_dp4 4 "${gpt[@]}" --strategy zeropp "${dp4[@]}"
train gpt_zeropp_tp2_sp 8 "${gpt[@]}" --strategy zeropp "${tp2[@]}" --sp
train gpt_hier3_dp4 4 "${gpt[@]}" --strategy hier3 "${dp4[@]}"
train gpt_hier3_tp2 8 "${gpt[@]}" --strategy hier3 "${tp2[@]}"
[ $fail -eq 0 ] || exit 1

compare exact gpt_zero3_tp2 gpt_zero3_dp4
compare exact gpt_zero3_tp4_sp gpt_zero3_dp2
compare exact llama_zero3_tp2_sp llama_zero3_dp4
compare exact llama_zero3_tp4 llama_zero3_dp2
compare mean gpt_zeropp_tp2_sp gpt_zeropp_dp4
compare mean gpt_hier3_tp2 gpt_hier3_dp4
exit $fail
