#!/usr/bin/env bash
# What offload costs per step on this machine: one rank, `tierzero train
# --strategy zero3`, seq 128, micro-batch 2, STEPS steps per placement
# (median step time, the first step dropped), for each model in MODELS:
#   none         every state in memory
#   optim-nvme   --offload-optimizer nvme
#   param-nvme   --offload-param nvme
#   both-nvme    both (two swap files)
#   both-cpu     both to the host (on the CPU backend the same memory: the
#                bookkeeping's cost, expected none)
# with the swap files in DIR (default: a fresh folder under /tmp), and the
# disk's own sequential rate there first: dd with O_DIRECT, 4 MiB blocks,
# 1 GiB written then read. One JSON line per model and placement, and one
# for the disk. Not a test (the figures are the machine's).
#   MODELS="gpt-mini gpt2-124m" STEPS=8 bench/offload_overhead.sh [TIERZERO] [DIR]
set -eu
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tz=$(realpath "${1:-$root/build/tierzero}")
work=$(mktemp -d)
dir=${2:-$work/swap}
mkdir -p "$dir"
trap 'rm -rf "$work" "$dir"/tierzero-bench.dd' EXIT
export OPENBLAS_NUM_THREADS=1
# dd prints "..., 1.1 GB/s" (or MB/s) last on its summary line.
rate() { tail -1 | awk '{ v = $(NF-1); u = $NF; print (u == "GB/s" ? v * 1e9 : u == "MB/s" ? v * 1e6 : v * 1e3) }'; }
write=$(dd if=/dev/zero of="$dir/tierzero-bench.dd" bs=4M count=256 oflag=direct 2>&1 | rate)
read=$(dd if="$dir/tierzero-bench.dd" of=/dev/null bs=4M iflag=direct 2>&1 | rate)
printf '{"disk":"%s","dd_write_Bps":%s,"dd_read_Bps":%s}\n' "$dir" "$write" "$read"
for model in ${MODELS:-gpt-mini gpt2-124m}; do
  for placement in none optim-nvme param-nvme both-nvme both-cpu; do
    case $placement in
      none) flags=() ;;
      optim-nvme) flags=(--offload-optimizer nvme) ;;
      param-nvme) flags=(--offload-param nvme) ;;
      both-nvme) flags=(--offload-optimizer nvme --offload-param nvme) ;;
      both-cpu) flags=(--offload-optimizer cpu --offload-param cpu) ;;
    esac
    "$tz" train --model "$model" --seq-len 128 --micro-batch 2 --steps "${STEPS:-8}" --strategy zero3 --log-every 100000 \
      --nvme-path "$dir" "${flags[@]}" --metrics "$work/m.jsonl" > "$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
    python3 - "$work/m.jsonl" "$model" "$placement" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
times = [r["step_time_s"] for r in rows[1:]]
mem = rows[-1]["memory_bytes"]
print(json.dumps({"model": sys.argv[2], "placement": sys.argv[3], "median_step_s": statistics.median(times),
                  "steps": len(times), "final_loss": rows[-1]["loss"],
                  "file_bytes": sum(v for k, v in mem.items() if k.endswith("_file")),
                  "host_bytes": sum(v for k, v in mem.items() if k.endswith("_host"))}))
PY
  done
done
