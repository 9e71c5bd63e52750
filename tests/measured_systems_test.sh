#!/usr/bin/env bash
# scripts/measured_systems.py writes exactly the committed system files from
# the committed measurements, and refuses a table it cannot read, naming it.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
python3 "$root/scripts/measured_systems.py" --out "$tmp" >/dev/null || { echo "FAIL: the converter failed"; exit 1; }
for f in frontier-rccl perlmutter-nccl; do
  diff -u "$root/data/systems/$f.toml" "$tmp/$f.toml" >/dev/null || { echo "FAIL: data/systems/$f.toml is not what the converter writes"; fail=1; }
done
# A row whose logged bus bandwidth disagrees with its time is refused, naming the log.
csv=$root/data/measured-collectives/frontier-perlmutter.csv
sed 's/,8,64,nccl,1024,output,1073.742,output,72.993,14.480/,8,64,nccl,1024,output,1073.742,output,72.993,1.448/' "$csv" >"$tmp/bad.csv"
out=$(python3 "$root/scripts/measured_systems.py" --csv "$tmp/bad.csv" --out "$tmp/bad" 2>&1) && { echo "FAIL: accepted a corrupt row"; fail=1; }
echo "$out" | grep -q "slurm-2985165.out (64 ranks, 1024 MiB): logged bus bandwidth 72.993" || { echo "FAIL: message: $out"; fail=1; }
[ -e "$tmp/bad/frontier-rccl.toml" ] && { echo "FAIL: wrote a system file from a corrupt table"; fail=1; }
out=$(python3 "$root/scripts/measured_systems.py" --csv "$tmp/none.csv" --out "$tmp/x" 2>&1) && { echo "FAIL: accepted a missing file"; fail=1; }
echo "$out" | grep -q "cannot read" || { echo "FAIL: message: $out"; fail=1; }
[ $fail -eq 0 ] && echo "ok: the measured system files match their converter"
exit $fail
