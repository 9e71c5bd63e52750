#!/usr/bin/env bash
# The cluster admin's walkthrough (docs/walkthrough-planner.md), its
# commands run as the page gives them (walkthrough_lib.sh) and what it says
# of their output checked; then at small scale, plans as data end to end:
# every plan that `tierzero plan` lists for gpt-tiny on 8 ranks of the
# emulated cluster's 2 x 2 x 2 layout
# (its default top 10), and the plan `simulate` prices for each shipped
# strategy, is written as a plan file, trained for 2 steps with the command
# the file itself gives (train --plan), and moves per level exactly the
# bytes the simulator's traffic model predicted for it. A run config's
# [plan] table trains alike. Bad plan files and conflicting flags are
# exit 2 naming the file and the key.
# Usage: plan_walkthrough_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/script_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/walkthrough_lib.sh"
page=$(dirname "${BASH_SOURCE[0]}")/../docs/walkthrough-planner.md

# 0. The page's commands, as written, and what it says of their output: memory's first line and verdict, the plan
#    file's header with its command, and section 5's predicted bytes, in tiny.toml and at every step of m.jsonl.
w=$tmp/walk
run_walkthrough "$page" "$w" && ok "docs/walkthrough-planner.md's commands run as written" || { tail -5 "$w/walkthrough.log"; bad "the page's commands"; }
grep -q "^assumed: micro-batch 4 x sequence 2048 (the model's context, at most 2048), 1 micro-batch per step, recompute full, bf16 parameters, engine tierzero" "$w/walkthrough.log" &&
  grep -q "^  total  *[0-9.]* GB of 80.0 GB: fits" "$w/walkthrough.log" && ok "memory: what it assumed, and the 13B fits 80 GB under zero3" || bad "memory's output"
grep -q "^# run it (32 ranks): tierzero train --plan best.toml --model llama2-13b.toml --topology node=8,world=4 --micro-batch 4 --seq-len 2048$" "$w/best.toml" &&
  grep -q "^# 32 ranks of dgx-h100 (node=8,world=4)$" "$w/best.toml" && ok "best.toml's header names the job and the command that runs it" || bad "best.toml's header"
python3 - "$page" "$w/tiny.toml" "$w/m.jsonl" <<'PY' && ok "section 5: the page's predicted bytes are tiny.toml's and every step's of m.jsonl" || bad "section 5's bytes"
import json, re, sys
page, plan = open(sys.argv[1]).read(), open(sys.argv[2]).read()
said = dict((k, int(v)) for k, v in re.findall(r"(node|world) (\d+)", re.search(r"comment predicts `([^`]*)`", page).group(1)))
predicted = dict((k, int(v)) for k, v in re.findall(r"(node|world) (\d+)", re.search(r"by level: (.*)", plan).group(1)))
rows = [json.loads(l) for l in open(sys.argv[3])]
assert said == predicted, (said, predicted)
assert [r["step"] for r in rows] == [1, 2, 3, 4, 5] and all(r["bytes_per_level"] == said for r in rows), rows
PY

topo=package=2,node=2,world=2
# The emulated cluster (scripts/cluster.sh's defaults) as a system file: ranks of one package share memory (the cpu
# preset's measured node rate), each package's 2 Gbit/s link is shared by its 2 ranks, each package's 200 Mbit/s NIC
# (400 Mbit/s per node) by its 2; a rank's compute and memory as data/devices/cpu.toml's.
cat > "$tmp/emulated.toml" <<'TOML'
name = "emulated"
memory_gb = 17.18
peak_tflops = 0.09
memory_bandwidth_gbs = 14.5
collectives = "mpi"
[[level]]
name = "package"
fanout = 2
bandwidth_gbs = 10.0
latency_us = 5
[[level]]
name = "node"
fanout = 2
bandwidth_gbs = 0.125
latency_us = 50
[[level]]
name = "world"
fanout = 0
bandwidth_gbs = 0.0125
latency_us = 100
TOML
job=(--model gpt-tiny --ranks 8 --seq-len 32 --micro-batch 1)
# train_as FILE METRICS: runs the "run it" command the plan file's comment gives, for 2 steps.
train_as() {
  local cmd
  cmd=$(sed -n 's/^# run it (8 ranks): tierzero train //p' "$1")
  [ -n "$cmd" ] || { bad "$1 says no train command"; return 1; }
  # shellcheck disable=SC2086  # the comment's words, as the user would paste them
  "$mpirun" --oversubscribe -np 8 "$tz" train $cmd --steps 2 --log-every 100 --metrics "$2" > "$tmp/log" 2>&1 ||
    { tail -3 "$tmp/log"; bad "train --plan $1"; return 1; }
}
# same_bytes METRICS PREDICTED_JSON WHAT: the last step's bytes per level equal the prediction's.
same_bytes() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
got = rows[-1]["bytes_per_level"]
want = json.loads(sys.argv[2])["bytes_per_level"]
assert len(rows) == 2 and got == want, (sys.argv[3], got, want)
PY
}

# 1. Every plan the planner lists: written (--write-plans), trained as its file says, the predicted bytes moved.
mkdir -p "$tmp/plans"
"$tz" plan --system "$tmp/emulated.toml" --topology package=2,node=2 "${job[@]}" --json --write-plans "$tmp/plans" \
  --write-plan "$tmp/best.toml" > "$tmp/plans.jsonl" 2> "$tmp/plan.err" || { cat "$tmp/plan.err"; bad "plan --write-plans"; }
grep -q "^assumed: micro-batch 1 x sequence 32, 1 micro-batch per step, recompute full, bf16 parameters, engine tierzero" "$tmp/plan.err" ||
  bad "plan says what it assumed: $(head -1 "$tmp/plan.err")"
listed=$(wc -l < "$tmp/plans.jsonl")
# The files differ only in the train command of their comment (the path).
[ "$listed" -eq 10 ] && [ "$(ls "$tmp/plans" | wc -l)" -eq 10 ] &&
  cmp -s <(grep -v '^# run it' "$tmp/best.toml") <(grep -v '^# run it' "$tmp/plans/plan-1.toml") ||
  bad "10 plans listed and written, the best as --write-plan ($listed listed)"
kinds=""
for i in $(seq 1 "$listed"); do
  f="$tmp/plans/plan-$i.toml"
  row=$(sed -n "${i}p" "$tmp/plans.jsonl")
  train_as "$f" "$tmp/p$i.jsonl" || continue
  # The run trained the plan the planner listed (its description, as the log gives it) and moved its bytes.
  described=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["plan"])' "$row")
  grep -qF "with $described," "$tmp/log" || bad "plan $i: the run's plan is not the listed one ($described)"
  same_bytes "$tmp/p$i.jsonl" "$row" "plan $i" && kinds="$kinds|$described" || bad "plan $i: bytes per level"
done
[ "$(tr '|' '\n' <<<"${kinds#|}" | sort -u | wc -l)" -ge 5 ] && ok "every plan listed ($listed) trained from its file with the bytes per level predicted" ||
  bad "the listed plans' runs"

# 2. Every shipped strategy as simulate prices it on this job (--write-plan), trained from the file alike.
for s in ddp zero1 zero2 zero3 zeropp mics hier3; do
  row=$("$tz" simulate --system "$tmp/emulated.toml" --topology package=2,node=2 "${job[@]}" --strategy "$s" --json \
    --write-plan "$tmp/$s.toml" 2> /dev/null) || { bad "simulate --write-plan ($s)"; continue; }
  train_as "$tmp/$s.toml" "$tmp/$s.jsonl" && same_bytes "$tmp/$s.jsonl" "$row" "$s" || bad "$s: bytes per level"
done
[ $fail -eq 0 ] && ok "every strategy: simulate --write-plan, trained, the bytes per level simulated"

# 3. The same plan as a run config's [plan] table; a flag's plan wins over it.
{ echo "steps = 2"; echo "seq_len = 32"; echo "micro_batch = 1"; echo "log_every = 100"; grep -v '^#' "$tmp/best.toml"; } > "$tmp/run.toml"
"$mpirun" --oversubscribe -np 8 "$tz" train --config "$tmp/run.toml" --topology "$topo" --metrics "$tmp/config.jsonl" > "$tmp/log" 2>&1 &&
  same_bytes "$tmp/config.jsonl" "$(head -1 "$tmp/plans.jsonl")" "config" && grep -q "with search (" "$tmp/log" &&
  ok "a run config's [plan] table trains the plan" || { tail -3 "$tmp/log"; bad "train --config with [plan]"; }
"$tz" train --config "$tmp/run.toml" --strategy zero3 > "$tmp/log" 2>&1 &&  # one rank: which plan is all this asks
  grep -q "with zero3 (" "$tmp/log" && ok "--strategy wins over the config's [plan]" || { tail -3 "$tmp/log"; bad "--strategy over [plan]"; }

# 3b. A plan file with NVMe offload names no directory (plan and simulate write none): --nvme-path gives it.
printf '[plan]\nparams = "world"\nbwd_params = "world"\ngrads = "world"\noptim = "world"\n[plan.optim_offload]\ndevice = "nvme"\n' > "$tmp/nvme.toml"
mkdir -p "$tmp/swap"
"$tz" train --plan "$tmp/nvme.toml" --nvme-path "$tmp/swap" --model gpt-tiny --seq-len 32 --steps 1 > "$tmp/log" 2>&1 &&
  grep -q "optim offload nvme" "$tmp/log" && ok "an NVMe plan file trains with --nvme-path" || { tail -3 "$tmp/log"; bad "NVMe plan with --nvme-path"; }

# 4. Bad input: exit 2 naming the file and the key, before any rank trains (one process: the same check on every
# rank; the last one through mpirun).
launcher=()
expect_2() {  # expect_2 MESSAGE ARGS...: train exits 2 and says MESSAGE
  local want=$1 out rc
  shift
  out=$("${launcher[@]}" "$tz" train --model gpt-tiny --seq-len 32 --steps 1 "$@" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -qF -- "$want" <<<"$out" && ok "exit 2: $want" || { echo "$out" | tail -3; bad "expected exit 2 and '$want' (exit $rc)"; }
}
variant() {  # variant NAME SED: the best plan with one line changed
  sed "$2" "$tmp/best.toml" > "$tmp/$1.toml"
}
variant unknown 's/^prefetch = /prefech = /'
expect_2 "$tmp/unknown.toml: unknown key 'plan.prefech'" --plan "$tmp/unknown.toml"
variant bits 's/^weight_bits = .*/weight_bits = 6/'
expect_2 "$tmp/bits.toml: key 'plan.weight_bits': the quantiser does 16 (unquantised), 8 or 4 bits, got 6" --plan "$tmp/bits.toml"
variant gbits 's/^grad_bits = .*/grad_bits = "package=16,node=8,world=2"/'
expect_2 "$tmp/gbits.toml: key 'plan.grad_bits': bits per hop 'package=16,node=8,world=2': bits of world must be 16, 8 or 4" \
  --plan "$tmp/gbits.toml"
variant malformed 's/^quant_block = .*/quant_block = "sixty-four"/'
expect_2 "$tmp/malformed.toml: key 'plan.quant_block' has the wrong type" --plan "$tmp/malformed.toml"
expect_2 "give one of --plan, --strategy and --deepspeed-config" --plan "$tmp/best.toml" --strategy zero3
echo '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}}' > "$tmp/ds.json"
expect_2 "$tmp/run.toml: its [plan] table and --deepspeed-config both give the plan; give one" --config "$tmp/run.toml" --deepspeed-config "$tmp/ds.json"
expect_2 "cannot read plan file '$tmp/none.toml'" --plan "$tmp/none.toml"
expect_2 "$tmp/nvme.toml: plan 'custom': " --plan "$tmp/nvme.toml"
launcher=("$mpirun" --oversubscribe -np 2)
variant level 's/^params = .*/params = "world"/; s/^bwd_params = .*/bwd_params = "package"/'
expect_2 "$tmp/level.toml: key 'plan.bwd_params': level package is not in the topology node=2,world=1" --plan "$tmp/level.toml" --topology node=2
out=$("$tz" plan --system "$tmp/emulated.toml" --topology package=2,node=2 "${job[@]}" --write-plans "$tmp/nowhere" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "Directory does not exist" <<<"$out" && ok "plan --write-plans to a missing folder: exit 2" || bad "--write-plans nowhere (exit $rc): $out"
[ $fail -eq 0 ] && echo "plan_walkthrough: all passed"
exit $fail
