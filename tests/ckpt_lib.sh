# Shared by the checkpoint scripts (ckpt_test.sh, ckpt_faults_test.sh): on
# top of script_lib.sh (scratch folder, pass/fail bookkeeping), a gpt-tiny
# run under mpirun and the comparison of two metrics files. Sourced with
# TIERZERO MPIRUN as $1 $2.
source "$(dirname "${BASH_SOURCE[0]}")/script_lib.sh"
say() { echo "$*"; }
run() { "$mpirun" --oversubscribe -np "$1" "$tz" train --model gpt-tiny --seq-len 32 --param-dtype fp32 --log-every 1000 "${@:2}"; }
compare() {  # compare A B RELTOL AFTER_STEP: B's rows start after step AFTER_STEP (0, or its checkpoint's); its losses equal A's
  python3 - "$@" <<'PY'
import json, sys
a = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1]))}
b = [json.loads(l) for l in open(sys.argv[2])]
tol, first = float(sys.argv[3]), int(sys.argv[4]) + 1
assert b and b[0]["step"] == first, ("resumed run starts at", b[0]["step"] if b else None)
worst = max(abs(r["loss"] - a[r["step"]]) / a[r["step"]] for r in b)
assert worst <= tol, f"worst relative loss difference {worst:.3g} > {tol}"
print(f"   {len(b)} steps from {first}: worst relative difference {worst:.3g} (tolerance {tol})")
PY
}
expect_fail() {  # expect_fail PATTERN -- command...
  local pattern=$1; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 0 ] || ! grep -q -- "$pattern" <<<"$out"; then bad "expected failure '$pattern' (exit $rc)"; echo "$out" | tail -5; else say "ok: fails with '$pattern' (exit $rc)"; fi
}
