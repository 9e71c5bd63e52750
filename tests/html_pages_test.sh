#!/usr/bin/env bash
# tierzero's HTML pages in a real browser: a 4-rank gpt-tiny run that is
# preempted and resumed, with a measured system beside it, gets its
# report (`tierzero report DIR`); simulate --html and plan --html write
# theirs; headless Chromium (Debian's, installed here when missing; the
# test is skipped, exit 77, only where it cannot be) opens each with no
# network and html_pages_check.mjs fails on a console error, a request, a
# blank chart, one missing data, overlapping or cut labels, a legend not
# drawn whole, or one line hiding another. A page without its chart
# library, and the report drawn as it misled before (a scrolling legend,
# crowded labels, TFLOPS on a second axis over tokens/s), must fail it. Bad input: a metrics file cut mid-line (a killed
# run) is read up to it with a note; a folder without metrics names what
# was looked for (exit 2). Screenshots go to OUT_DIR.
#   html_pages_test.sh TIERZERO MPIRUN OUT_DIR
set -u
tz=$1 mpirun=$2 out=$3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
skip() { echo "SKIP: $*"; exit 77; }

if [ ! -x /usr/bin/chromium ]; then
  [ "$(id -u)" -eq 0 ] || skip "Debian's chromium is not installed and this is not root"
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; } > "$tmp/apt.log" 2>&1 \
    || skip "Debian's chromium could not be installed: $(tail -n 1 "$tmp/apt.log")"
fi
"$root/scripts/web_deps.sh" > "$tmp/npm.log" 2>&1 || skip "the npm packages of web/ could not be installed: $(tail -n 1 "$tmp/npm.log")"

run=$tmp/run
mkdir -p "$run" "$out"
train() { "$mpirun" --oversubscribe -np 4 "$tz" train --model gpt-tiny --seq-len 32 --micro-batch 2 --strategy hier3 --topology package=2,node=2 \
  --steps 12 --breakdown --val-fraction 0.05 --eval-every 4 --eval-batches 2 --log-every 1000 --save-dir "$run/ckpt" --save-every 100 \
  --metrics "$run/metrics.jsonl" "$@"; }
TIERZERO_FAULT_SIGNAL=0:6 train > "$tmp/log1" 2>&1
rc=$?
[ $rc -eq 75 ] || bad "the preempted run exited $rc: $(tail -n 3 "$tmp/log1")"
train --resume latest > "$tmp/log2" 2>&1 || bad "the resumed run: $(tail -n 3 "$tmp/log2")"
# The system beside the run, as `tierzero bench comm --write-system` would leave it (its figures written here: the bench takes seconds).
cat > "$run/measured-system.toml" <<'TOML'
name = "measured"
memory_gb = 0.01
peak_tflops = 0.004
memory_bandwidth_gbs = 14.5
collectives = "mpi"
[[level]]
name = "package"
fanout = 2
bandwidth_gbs = 0.5
latency_us = 16
[[level]]
name = "node"
fanout = 2
bandwidth_gbs = 0.3
latency_us = 20
[[level]]
name = "world"
fanout = 0
bandwidth_gbs = 0.2
latency_us = 30
TOML

page=$("$tz" report "$run" 2> "$tmp/report.err")
[ "$page" = "$run/report.html" ] && grep -q "resumed after 6" "$page" && grep -q "the simulator on .*measured: $run/measured-system.toml" "$page" \
  && echo "ok: report of the run's folder, the restart and the measured system in it" || bad "report: '$page' $(cat "$tmp/report.err")"
"$tz" simulate --model gpt-20b --system frontier --strategy zero3,zeropp,hier3 --ranks 8,64,384 --html "$tmp/simulate.html" > /dev/null \
  || bad "simulate --html"
"$tz" plan --model gpt-20b --system frontier --ranks 64 --top 4 --html "$tmp/plan.html" > /dev/null 2>&1 || bad "plan --html"

# A killed run's metrics: the last line cut mid-row.
head -c -40 "$run/metrics.jsonl" > "$tmp/cut.jsonl"
"$tz" report "$tmp/cut.jsonl" -o "$tmp/cut.html" > /dev/null 2> "$tmp/cut.err" \
  && grep -q "the last line of '$tmp/cut.jsonl' (line 12) is cut short, as a killed run leaves it: read the 11 rows before it" "$tmp/cut.err" \
  && grep -q "read the 11 rows before it" "$tmp/cut.html" && echo "ok: a cut last line is read up to, with a note" || bad "cut metrics: $(cat "$tmp/cut.err")"
mkdir "$tmp/empty"
msg=$("$tz" report "$tmp/empty" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "no metrics for the report: looked for $tmp/empty/metrics.jsonl" <<<"$msg" \
  && echo "ok: a folder without metrics names what was looked for (exit 2)" || bad "empty folder: exit $rc: $msg"
sed '5s/.*/{"step": oops/' "$run/metrics.jsonl" > "$tmp/broken.jsonl"
msg=$("$tz" report "$tmp/broken.jsonl" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "'$tmp/broken.jsonl' line 5 is not a metrics row" <<<"$msg" && echo "ok: a bad row inside names its line (exit 2)" \
  || bad "broken metrics: exit $rc: $msg"

# The browser: every page, and a page without ECharts, which must fail.
python3 - "$page" "$tmp/no-library.html" <<'PY'
import sys
html = open(sys.argv[1]).read()
start = html.index("<script>\n") + len("<script>\n")
open(sys.argv[2], "w").write(html[:start] + html[html.index("\n</script>", start):])
PY
# The report drawn as it misled before: a legend that scrolls in a narrow box (its items cut), upright bars whose
# labels run into each other, and TFLOPS on a second axis of the tokens/s chart (the same line, on top of it).
python3 - "$page" "$tmp/misleading.html" <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
m = re.search(r'(<script type="application/json" id="tz-charts">)(.*?)(</script>)', html, re.S)
charts = json.loads(m.group(2))
by_title = {c["option"]["title"]["text"]: c["option"] for c in charts}
by_title["Bytes received per level per step (rank 0)"]["legend"] = {"top": 26, "type": "scroll", "width": 300}
bars = by_title["The engine's allocations by state (rank 0)"]
bars["xAxis"], bars["yAxis"] = bars["yAxis"], bars["xAxis"]
bars["xAxis"]["data"] = [s + "_state_name" for s in bars["xAxis"]["data"]]
rate = by_title["Tokens per second (all ranks)"]
tflops = {k: v for k, v in rate["series"][0].items() if k != "markLine"}
# Both axes over the same range, one 1e4 times the other, so the two lines coincide whatever the data (left to their
# own nice-number extents, a scaled copy's axis may round differently).
ys = [y for _, y in tflops["data"] if y is not None]
lo, hi = min(ys), max(ys)
rate["yAxis"][0].update({"min": lo, "max": hi, "scale": False})
rate["yAxis"].append({"type": "value", "min": lo / 1e4, "max": hi / 1e4})
rate["series"].append(dict(tflops, name="TFLOPS", yAxisIndex=1, data=[[x, y / 1e4] for x, y in tflops["data"]]))
next(c for c in charts if c["option"] is rate)["marks"] += len(tflops["data"])
text = json.dumps(charts).replace("<", "\\u003c")
open(sys.argv[2], "w").write(html[:m.start(2)] + text + html[m.end(2):])
PY
export TZ_WEB_DIR=$root/web
msg=$(timeout 120 node "$root/tests/html_pages_check.mjs" /usr/bin/chromium "$out" "$page" "$tmp/simulate.html" "$tmp/plan.html" \
  "$tmp/cut.html" "!$tmp/no-library.html" "!$tmp/misleading.html" 2>&1) || bad "the pages in Chromium"
echo "$msg"
grep -q "ok: no-library.html must fail the check: uncaught: echarts is not defined" <<<"$msg" || bad "the check passed a page without ECharts"
for flaw in "chart 'Bytes received per level per step \(rank 0\)': '[a-z]+ \((measured|predicted)\)' (is cut \(clipped\)|runs past the chart's edge)" \
  "chart 'The engine's allocations by state \(rank 0\)': 'params_state_name' overlaps 'bwd_params_state_name'" \
  "chart 'Tokens per second \(all ranks\)': line 'measured' and line 'TFLOPS' are drawn on top of each other"; do
  grep -qE "$flaw" <<<"$msg" || bad "the check missed: $flaw"
done
[ $fail -eq 0 ] && echo "html pages: all passed"
exit $fail
