#!/usr/bin/env bash
# The flight recorder and tierzero diagnose on real jobs (docs/formats.md,
# "Flight recorder"): a rank stalled in compute or in its I/O thread, a rank
# SIGKILLed, a collective whose bytes differ on one rank, SIGUSR2 to a
# healthy run, a fatal signal, and damaged or foreign dumps.
# Usage: flight_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/ckpt_lib.sh"

hier=(--strategy hier3 --topology package=2,node=2,world=2 --micro-batch 2)
# diagnose DIR PYTHON: runs `tierzero diagnose DIR --json` and the Python
# assertions on its object `v`; prints what failed.
check() {
  "$tz" diagnose "$1" --json > "$tmp/verdict.json" 2>"$tmp/diag.err"
  python3 - "$tmp/verdict.json" "$2" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
ranks = {r["rank"]: r for r in v["ranks"]}
exec(sys.argv[2])
PY
}

# 1. Rank 5 of 8 (hier3) stalls in the forward of its first block in step 3,
#    under tierzero launch: the others time out (exit 3) and the launcher
#    prints the verdict. It names rank 5 as missing from the gather the
#    others wait in, with its activity; the ranks waiting on rank 5's own
#    hops wait at the world (rank 1), node (rank 7) and package (rank 4)
#    levels; every other rank waits in that gather.
TIERZERO_FAULT_STALL=5:3:compute "$tz" launch --max-restarts 0 --backoff 0 -- "$mpirun" --oversubscribe -np 8 "$tz" train --model gpt-tiny \
  --seq-len 32 --param-dtype fp32 --log-every 1000 "${hier[@]}" --steps 20 --save-dir "$tmp/stall" --comm-timeout 3 > "$tmp/stall.log" 2>&1
rc=$?
if [ $rc -eq 3 ] && grep -q "tierzero launch: where the ranks stopped" "$tmp/stall.log" &&
   grep -q "^verdict: rank 5 is missing from queue 0 job [0-9]* (forward_gather of unit 3 in step 3.*: all_gather on levels package,node,world), which ranks 0-4,6,7 wait in; rank 5 was in no collective: forward of unit 1 (step 3)" "$tmp/stall.log" &&
   check "$tmp/stall" '
f = v["first_missing"]
assert f["kind"] == "job" and f["missing"] == [5] and f["phase"] == "forward_gather" and f["ops"] == ["all_gather"], f
assert sorted({w["rank"] for w in f["waiting"]}) == [0, 1, 2, 3, 4, 6, 7], f["waiting"]
assert all(w["op"] == "all_gather" and not w["completed"] for w in f["waiting"])
at = {w["rank"]: w for w in f["waiting"]}
for rank, level in ((1, "world"), (7, "node"), (4, "package")):
    assert at[rank]["level"] == level and 5 in at[rank]["members"], (rank, at[rank])
m = f["missing_detail"][0]
assert m["rank"] == 5 and m["activity"]["what"] == "forward" and m["activity"]["unit"] == 1 and m["waiting_in"] == [], m
assert m["activity"]["for_s"] >= 2.5, m["activity"]
assert v["dead"] == [] and v["mismatches"] == [] and v["problems"] == []
'; then
  say "ok: a rank stalled in compute is named with its activity; the others wait in its gather at every level (launch printed the verdict)"
  grep "^verdict:" "$tmp/stall.log" | cut -c1-200
else bad "stall in compute (exit $rc)"; tail -25 "$tmp/stall.log"; cat "$tmp/diag.err"; fi

# 2. Rank 5's swap-file I/O thread stalls in step 3 (--offload-param nvme):
#    its training thread waits for offload I/O and never queues the gather.
TIERZERO_FAULT_STALL=5:3:io run 8 "${hier[@]}" --steps 20 --flight-dir "$tmp/io" --comm-timeout 3 --offload-param nvme \
  --nvme-path "$tmp/nvme" > "$tmp/io.log" 2>&1
rc=$?
if [ $rc -eq 3 ] && check "$tmp/io" '
f = v["first_missing"]
assert f["missing"] == [5] and f["phase"] == "forward_gather" and f["step"] == 3, f
assert sorted({w["rank"] for w in f["waiting"]}) == [0, 1, 2, 3, 4, 6, 7], f["waiting"]
m = f["missing_detail"][0]
assert m["activity"]["what"] == "offload_io" and m["activity"]["unit"] == 0 and m["waiting_in"] == [], m
'; then say "ok: a rank whose I/O thread stalled is named, waiting for offload I/O of unit 0"
else bad "stall in the I/O thread (exit $rc)"; tail -5 "$tmp/io.log"; "$tz" diagnose "$tmp/io" | head -5; fi

# 3. Rank 1 of 3 SIGKILLed mid-run: named dead; the survivors, ended by
#    mpirun's SIGTERM, say their last collective.
run 3 --strategy zero3 --steps 2000 --micro-batch 2 --flight-dir "$tmp/kill" --metrics "$tmp/kill.jsonl" > "$tmp/kill.log" 2>&1 &
job=$!
for _ in $(seq 300); do [ "$( (wc -l < "$tmp/kill.jsonl") 2>/dev/null || echo 0)" -ge 5 ] && break; sleep 0.05; done
victims=($(pgrep -f "^$tz train .*$tmp/kill"))
kill -9 "${victims[1]}"
wait $job; rc=$?
if [ $rc -ne 0 ] && [ ${#victims[@]} -eq 3 ] && check "$tmp/kill" '
assert len(v["dead"]) == 1 and sorted(ranks) == sorted({0, 1, 2} - set(v["dead"])), (v["dead"], list(ranks))
for r in ranks.values():
    assert r["reason"] == "SIGTERM" and (r["waiting_in"] or r["last_completed"]), r
f = v["first_missing"]
assert f is None or set(v["dead"]) <= set(f["missing"]), f
' && "$tz" diagnose "$tmp/kill" | grep -q "^verdict: rank [0-2] has no usable dump: dead"; then
  say "ok: a SIGKILLed rank is named dead and the others' last collectives are named"
  "$tz" diagnose "$tmp/kill" | sed -n 2p | cut -c1-200
else bad "SIGKILL (exit $rc, ${#victims[@]} ranks)"; tail -5 "$tmp/kill.log"; "$tz" diagnose "$tmp/kill" | head -12; fi

# 4. Rank 2 of 3 all-reduces 12 bytes where the others all-reduce 8 (the
#    loss and norm of step 3): the mismatch is named with both sides.
TIERZERO_FAULT_MISMATCH=2:3 run 3 --strategy zero3 --steps 20 --micro-batch 2 --flight-dir "$tmp/mis" --comm-timeout 3 > "$tmp/mis.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && "$tz" diagnose "$tmp/mis" > "$tmp/mis.txt" &&
   grep -q "^verdict: mismatch: the ranks' collectives differ at #[0-9]* of communicator 0 (world, level node, ranks {0,1,2}): ranks 0,1 issued all_reduce on communicator 0 (8 bytes of fp32), rank 2 issued all_reduce on communicator 0 (12 bytes of fp32)" "$tmp/mis.txt"; then
  say "ok: a collective whose bytes differ on one rank is named with both sides"
else bad "mismatch (exit $rc)"; tail -5 "$tmp/mis.log"; head -5 "$tmp/mis.txt"; fi

# 5. SIGUSR2 to one rank, then to tierzero launch (which passes it on
#    through mpirun): every rank dumps and goes on; the dumps agree on every
#    collective they share; the run ends bit for bit as one without it.
long=("${hier[@]}" --steps 150)
run 8 "${long[@]}" --flight-records 0 --metrics "$tmp/ref.jsonl" 2>/dev/null || bad "the reference run"
"$tz" launch --max-restarts 0 -- "$mpirun" --oversubscribe -np 8 "$tz" train --model gpt-tiny --seq-len 32 --param-dtype fp32 --log-every 1000 \
  "${long[@]}" --save-dir "$tmp/usr2" --metrics "$tmp/usr2.jsonl" > "$tmp/usr2.log" 2>&1 &
launcher=$!
for _ in $(seq 300); do [ "$( (wc -l < "$tmp/usr2.jsonl") 2>/dev/null || echo 0)" -ge 20 ] && break; sleep 0.05; done
ranks=($(pgrep -f "^$tz train .*$tmp/usr2"))
kill -USR2 "${ranks[3]}"
for _ in $(seq 100); do [ -n "$(ls "$tmp/usr2/flight" 2>/dev/null)" ] && break; sleep 0.05; done
one=$(ls "$tmp/usr2/flight")
kill -USR2 $launcher
for _ in $(seq 100); do [ "$(ls "$tmp/usr2/flight" | wc -l)" -ge 8 ] && break; sleep 0.05; done
wait $launcher; rc=$?
if [ $rc -eq 0 ] && [ "$(wc -w <<<"$one")" -eq 1 ] && compare "$tmp/ref.jsonl" "$tmp/usr2.jsonl" 0 0 &&
   python3 - "$tmp/usr2/flight" "$tmp/ref.jsonl" "$tmp/usr2.jsonl" <<'PY' && check "$tmp/usr2" 'assert v["dead"] == [] and v["mismatches"] == [] and v["problems"] == [], v'
import json, sys, itertools
dumps = [json.load(open(f"{sys.argv[1]}/rank-{r}.json")) for r in range(8)]
assert {d["job"] for d in dumps} == {dumps[0]["job"]} and all(d["reason"] == "SIGUSR2" and d["world_size"] == 8 for d in dumps)
def collectives(d):
    first = {c["id"]: c["members"][0] for c in d["communicators"]}
    return {(r["comm"], first[r["comm"]], r["seq"]): r for r in d["records"]}
shared = 0
keys = ("op", "bytes", "dtype", "bits", "queue", "job", "step", "micro", "phase", "unit")
for a, b in itertools.combinations(map(collectives, dumps), 2):
    for k in a.keys() & b.keys():
        assert all(a[k][f] == b[k][f] for f in keys), (k, a[k], b[k])
        shared += 1
assert shared > 1000, shared
ref, got = ([json.loads(l) for l in open(p)] for p in sys.argv[2:4])
assert [(r["loss"], r["grad_norm"]) for r in ref] == [(r["loss"], r["grad_norm"]) for r in got]
print(f"   {shared} collectives seen by two ranks' dumps, each the same on both")
PY
then say "ok: SIGUSR2 to a rank ($one) and to launch: every rank's dump, consistent, and the run finished bit for bit"
else bad "SIGUSR2 (exit $rc, first dump '$one', $(ls "$tmp/usr2/flight" 2>/dev/null | wc -l) dumps)"; tail -3 "$tmp/usr2.log"; fi

# 6. A fatal signal: the dump is written (reason SIGSEGV), then the process dies of it.
"$tz" train --model gpt-tiny --seq-len 32 --strategy zero3 --steps 100000 --log-every 100000 --flight-dir "$tmp/segv" --metrics "$tmp/segv.jsonl" 2>/dev/null &
pid=$!
for _ in $(seq 200); do [ -s "$tmp/segv.jsonl" ] && break; sleep 0.05; done
kill -SEGV $pid; wait $pid; rc=$?
[ $rc -eq 139 ] && python3 -c "import json,sys; d=json.load(open('$tmp/segv/flight/rank-0.json')); assert d['reason']=='SIGSEGV' and d['records'], d['reason']" &&
  say "ok: SIGSEGV writes the dump, then ends the process (exit $rc)" || bad "SIGSEGV (exit $rc)"

# 7. Damaged and foreign input: a truncated dump and a missing one are
#    named while the rest is diagnosed (exit 2); a dump of another job is
#    named and left out; a folder without dumps is an error.
cp -r "$tmp/stall/flight" "$tmp/damaged"
head -c 3000 "$tmp/stall/flight/rank-2.json" > "$tmp/damaged/rank-2.json"
rm "$tmp/damaged/rank-6.json"
out=$("$tz" diagnose "$tmp/damaged" 2>&1); rc=$?
# The stalled rank 5 usually dumps as Open MPI ends it; on a loaded machine its SIGKILL can come first (no dump):
# then it is named among the ranks without one.
if [ -f "$tmp/damaged/rank-5.json" ]; then
  dead="ranks 2,6" verdict="^verdict: ranks 2,6 have no usable dump: dead .*; ranks 2 (dead),5,6 (dead) are missing from queue 0 job .*; rank 5 was in no collective: forward of unit 1"
else
  dead="ranks 2,5,6" verdict="^verdict: ranks 2,5,6 have no usable dump: dead "
fi
if [ $rc -eq 2 ] && grep -q "error: rank-2.json: unusable (truncated or corrupt)" <<<"$out" && grep -q "^dead ranks: $dead (no usable dump)" <<<"$out" &&
   grep -q "$verdict" <<<"$out"; then
  say "ok: a truncated and a missing dump are named; the rest still names rank 5 (exit 2)"
else bad "damaged dumps (exit $rc)"; head -5 <<<"$out"; fi
cp "$tmp/usr2/flight/rank-3.json" "$tmp/damaged/rank-3.json"
out=$("$tz" diagnose "$tmp/damaged" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "error: rank-3.json: a dump of another job" <<<"$out" && say "ok: a dump of another job is named and left out (exit 2)" ||
  { bad "foreign dump (exit $rc)"; head -5 <<<"$out"; }
mkdir -p "$tmp/empty"
expect_fail "no flight dumps (rank-R.json) in" -- "$tz" diagnose "$tmp/empty"
exit $fail
