#!/usr/bin/env bash
# What simulate, plan and memory print, as a user acts on it: step time and
# tokens/s per device beside TFLOPS (validate's unit); the time of each level
# the job has; figures with 3 significant digits however small; only the
# strategies the engine runs (others marked); why tierzero's engine and
# DeepSpeed's differ, from their engine files; the cpu preset with the levels
# train runs on one machine; each row's range and an uncalibrated device;
# validate by publication and with each publication held out.
set -u
tz=$1
fail=0
check() {  # check NAME -- python code reading stdin (the output)
  local name=$1
  shift 2
  if python3 -c "$1" <<<"$out"; then echo "ok: $name"; else echo "FAIL: $name"; echo "$out"; fail=1; fi
}
run() { out=$("$@" 2>&1); local rc=$?; [ $rc -eq 0 ] || { echo "FAIL: '$*' exited $rc"; echo "$out"; fail=1; }; }

cpu_job=(--system cpu --topology node=2 --model gpt-mini --ranks 4 --micro-batch 2 --seq-len 128 --grad-accum 2)
# tokens/s per device is the step's tokens per rank (2 x 128 x 2) over the step time: in the JSON exactly, in the table to its digits.
run "$tz" plan "${cpu_job[@]}" --top 3 --json
check "plan --json: tokens/s per device = tokens per rank / step time" -- '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
assert len(rows) == 3, rows
for r in rows: assert abs(r["tokens_per_s_per_device"] * r["step_time_s"] - 512) < 1e-9, r
for r in rows: assert r["range"]["step_time_s"][0] < r["step_time_s"] < r["range"]["step_time_s"][1], r'
run "$tz" plan "${cpu_job[@]}" --top 3
check "plan: step_s, step_range_s around it and tokens/s columns, 3 significant digits" -- '
import sys
lines = sys.stdin.read().splitlines()
head = next(i for i, l in enumerate(lines) if l.split()[:5] == ["TFLOPS", "step_s", "step_range_s", "tokens/s", "GB"])
rows = [l.split() for l in lines[head + 1:] if l.split()[6:7] == ["recompute"]]
assert len(rows) == 3, rows
for r in rows:
    tflops, step, tokens = float(r[0]), float(r[1]), float(r[3])
    lo, hi = map(float, r[2].split("-"))
    assert lo < step < hi, r
    assert abs(tokens - 512 / step) <= 0.006 * tokens, r
    assert len(r[0].lstrip("0.").replace(".", "")) >= 3, r  # not 0.03'
# The hier3 line: its TFLOPS and the time of each level the job has, each with 3 significant digits.
check "plan: hier3 vs zeropp in significant digits, per level" -- '
import re, sys
line = next(l for l in sys.stdin if l.startswith("hier3 vs zeropp"))
figures = re.search(r": (\S+) vs (\S+) TFLOPS per device .*; time per level node (\S+) vs (\S+) s, world (\S+) vs (\S+) s;", line)
assert figures, line
for f in figures.groups(): assert float(f) > 0 and len(f.lstrip("0.").replace(".", "")) >= 3, (f, line)'
# The engines compared, and why: the keys of their files that move this job (a CPU rank has no FlashAttention: attention is no reason here).
check "plan on cpu: the engines differ in activation_bytes, not in attention" -- '
import sys
line = next(l for l in sys.stdin if "vs DeepSpeed" in l)
assert "Why, from the engine files (tierzero\x27s value vs deepspeed\x27s; xF: tierzero\x27s throughput with that one value of deepspeed\x27s):" in line, line
assert "activation_bytes 4 vs 2" in line and "attention" not in line, line
assert "data/engines/tierzero.toml, deepspeed.toml" in line, line'
run "$tz" plan --system dgx-h100 --model gpt-1.3b --ranks 64 --micro-batch 1 --seq-len 2048 --top 1
check "plan on an H100: eager attention and fp32 activations named, each with its factor" -- '
import re, sys
line = next(l for l in sys.stdin if "vs DeepSpeed" in l)
for key in ("attention eager vs flash2", "activation_bytes 4 vs 2"):
    factor = re.search(key + r" \(x(\d+\.\d\d+)\)", line)
    assert factor and float(factor.group(1)) > 1, (key, line)'

# A column per level the job has; "-" where the level joins no ranks (one node has no world level).
run "$tz" simulate --system dgx-h100 --model gpt-1.3b --ranks 8,16 --strategy zero3
check "simulate: node_s carries one node's time, world_s is - on one node" -- '
import sys
lines = sys.stdin.read().splitlines()
head = next(l.split() for l in lines if l.startswith("strategy"))
assert head[:9] == ["strategy", "ranks", "step_s", "compute_s", "TFLOPS", "tokens/s", "scaling", "fits", "GB"], head
assert head[9:11] == ["node_s", "world_s"], head
rows = {int(l.split()[1]): l.split() for l in lines if l.startswith("zero3 ")}
assert float(rows[8][9]) > 0 and rows[8][10] == "-", rows[8]
assert float(rows[16][9]) > 0 and float(rows[16][10]) > 0, rows[16]'

# FSDP runs neither ZeRO++ nor hier3: simulate lists what it runs; asked for more, it marks them.
run "$tz" simulate --system dgx-a100 --engine fsdp --model gpt-1.3b --ranks 64
check "simulate --engine fsdp: only the strategies FSDP runs" -- '
import sys
rows = [l.split()[0] for l in sys.stdin if l.split() and l.split()[0].rstrip("*") in ("zero3", "zeropp", "hier3")]
assert rows == ["zero3"], rows'
run "$tz" simulate --system dgx-a100 --engine fsdp --model gpt-1.3b --ranks 64 --strategy zero3,zeropp
check "simulate --engine fsdp --strategy zero3,zeropp: zeropp marked" -- '
import sys
text = sys.stdin.read()
rows = [l.split()[0] for l in text.splitlines() if l.startswith("zero")]
assert rows == ["zero3", "zeropp*"], rows
assert "* fsdp does not run zeropp (its strategies: ddp, zero2, zero3, mics; data/engines/fsdp.toml): priced as if it did" in text, text'
run "$tz" simulate --system dgx-a100 --engine fsdp --model gpt-1.3b --ranks 64 --strategy zero3,zeropp --json
check "simulate --json: engine_runs" -- '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
assert [(r["strategy"], r["engine_runs"]) for r in rows] == [("zero3", True), ("zeropp", False)], rows'
run "$tz" memory --system dgx-a100 --engine fsdp --model gpt-1.3b --ranks 64 --strategy hier3
check "memory --engine fsdp --strategy hier3: the note" -- '
import sys
assert "note: fsdp does not run hier3" in sys.stdin.read()'

# The cpu preset takes the demo's layout (train runs it on one machine): package and node priced as shared memory.
for cmd in "memory --strategy hier3" "simulate --strategy hier3" "plan --top 1"; do
  # shellcheck disable=SC2086
  run "$tz" $cmd --system cpu --topology package=2,node=2 --model gpt-tiny --ranks 8 --seq-len 32 --micro-batch 1
done
run "$tz" simulate --strategy hier3 --system cpu --topology package=2,node=2 --model gpt-tiny --ranks 8 --seq-len 32 --micro-batch 1
check "simulate --system cpu --topology package=2,node=2: a package column with time" -- '
import sys
lines = sys.stdin.read().splitlines()
head = next(l.split() for l in lines if l.startswith("strategy"))
row = next(l.split() for l in lines if l.startswith("hier3"))
assert head[9:12] == ["package_s", "node_s", "world_s"], head
assert all(float(x) > 0 for x in row[9:12]), row'
# The range of every row (docs/simulator.md, "What is not known"): a step_range_s column, fastest-slowest around step_s;
# --json's range with the factors varied and the step time at either end.
run "$tz" simulate --system dgx-h100 --model gpt-1.3b --ranks 16 --strategy zero3
check "simulate: step_range_s holds step_s" -- '
import sys
lines = sys.stdin.read().splitlines()
head = next(l.split() for l in lines if l.startswith("strategy"))
row = dict(zip(head, next(l.split() for l in lines if l.startswith("zero3 "))))
lo, hi = map(float, row["step_range_s"].split("-"))
assert lo < float(row["step_s"]) < hi, row'
run "$tz" simulate --system dgx-h100 --model gpt-1.3b --ranks 16 --strategy zero3 --json
check "simulate --json: range" -- '
import json, sys
r = next(json.loads(l) for l in sys.stdin if l.startswith("{"))
g = r["range"]
assert g["varied"] == {"network_bandwidth": [0.75, 1.25], "gemm_efficiency": [0.75, 1.25]}, g
assert g["step_time_s"][0] < r["step_time_s"] < g["step_time_s"][1], g
assert g["tokens_per_s_per_device"][0] < r["tokens_per_s_per_device"] < g["tokens_per_s_per_device"][1], g'

# A system file without based_on: its device is uncalibrated (the assumed line), and no error band applies.
own=$(mktemp --suffix .toml)
printf "memory_gb = 80\npeak_tflops = 989\nmemory_bandwidth_gbs = 3350\n[[level]]\nname = \"node\"\nfanout = 8\nbandwidth_gbs = 450\nlatency_us = 3\n[[level]]\nname = \"world\"\nbandwidth_gbs = 50\nlatency_us = 5\n" > "$own"
run "$tz" simulate --system "$own" --model gpt-1.3b --ranks 16 --strategy zero3 --attention eager
rm -f "$own"
check "simulate --system FILE without based_on: uncalibrated, no error band" -- '
import sys
lines = sys.stdin.read().splitlines()
why = "the system file names no device preset (based_on): its figures are its own, none of them checked against the corpus"
assert lines[0].startswith("assumed: ") and lines[0].endswith("; device uncalibrated: " + why), lines[0]
assert lines[-1] == "error band: does not apply: the device is uncalibrated: " + why, lines[-1]'

# validate by publication, and each publication held out, on three of the corpus's (one cycle of the fit, to stay quick):
# torchtitan's docs give 9 rows, one of them out of memory; the Hugging Face blog 2; FlagPerf 3.
corpus=$(mktemp --suffix .toml)
python3 - "$(dirname "$0")/../data/published-runs.toml" "$corpus" <<'PY'
import sys
blocks = open(sys.argv[1]).read().split("[[run]]")
keep = ("/pytorch/torchtitan/", "/huggingface/blog/", "/FlagOpen/FlagPerf")
open(sys.argv[2], "w").write("".join("[[run]]" + b for b in blocks[1:] if any(k in b for k in keep)))
PY
run "$tz" validate --corpus "$corpus" --by-source --json
check "validate --by-source --json: one object per publication" -- '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
assert [(r["source"], r["runs"]) for r in rows] == [("FlagOpen/FlagPerf", 3), ("huggingface/blog", 2), ("pytorch/torchtitan", 8)], rows
for r in rows: assert list(r) == ["source", "runs", "median_abs_error", "max_abs_error"] and 0 <= r["median_abs_error"] <= r["max_abs_error"], r'
run "$tz" validate --corpus "$corpus" --leave-one-source-out --fit-cycles 1 --json
check "validate --leave-one-source-out --json: each publication priced with constants fitted without it" -- '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
assert [(r["source"], r["runs"]) for r in rows] == [("FlagOpen/FlagPerf", 3), ("huggingface/blog", 2), ("pytorch/torchtitan", 8)], rows
for r in rows: assert list(r)[:4] == ["source", "runs", "median_abs_error", "max_abs_error"] and len(r["constants"]) == 10, r
# Nothing among these runs is FP8: the FP8 efficiency stays at the middle of its bounds.
assert all(r["constants"]["h100_fp8"] == (0.2 + 0.709) / 2 for r in rows), rows'
run "$tz" validate --corpus "$corpus" --leave-one-source-out --fit-cycles 1
check "validate --leave-one-source-out: a line per publication and the median of their medians" -- '
import sys
lines = sys.stdin.read().splitlines()
assert lines[0].split() == ["source", "runs", "median", "|error|", "largest"], lines[0]
assert [l.split()[0] for l in lines[1:4]] == ["FlagOpen/FlagPerf", "huggingface/blog", "pytorch/torchtitan"], lines
assert lines[4].startswith("each priced with the constants fitted on the fitting half without it: 3 sources, median of their median |error| "), lines[4]'
rm -f "$corpus"
exit $fail
