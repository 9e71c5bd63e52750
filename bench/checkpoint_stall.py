#!/usr/bin/env python3
"""Training stall per checkpoint, synchronous against --async-save, side by side.

Trains gpt-mini on 8 ranks (zero3, node=4,world=2, bf16) for STEPS steps,
saving every EVERY steps, synchronously and with --async-save, alternately
for ROUNDS rounds. Each run is measured against itself, since runs launched
one after another on shared cores differ by more than a save costs: the
metrics' `checkpoint` object says, per step, how long the training thread
spent in save calls since the previous row (save_s: the save after the
previous step, which this row's step time holds) and whether a background
write overlapped the step (writing). A step with neither is quiet; the
run's baseline is the median of its quiet steps, and a save's stall is

    sum over the steps it touched of (step_time_s - baseline)

(the step holding its save calls, then those its writer overlapped), so it
holds the whole synchronous save, the asynchronous snapshot and whatever
the writer takes from the steps it overlaps. The first step (warm-up) and
the last (whose save must finish before the run ends, asynchronous or not)
are not counted. Also reported: the training thread's own time in each
save's calls (blocked; for --async-save the snapshot), which leaves out what
the writer takes from training on shared cores. Prints a JSON line per run
and one with the medians over every save of every round and their ratios.

Usage: bench/checkpoint_stall.py [TIERZERO] [--steps 65] [--every 8] [--rounds 3]"""
import argparse
import json
import platform
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(tz, mode, steps, every, work):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               MALLOC_MMAP_MAX_="0", MALLOC_TRIM_THRESHOLD_="17179869184", OPENBLAS_NUM_THREADS="1")
    metrics = os.path.join(work, f"{mode}.jsonl")
    save_dir = os.path.join(work, mode)
    cmd = ["mpirun", "-np", "8", tz, "train", "--model", "gpt-mini", "--seq-len", "128", "--micro-batch", "1", "--strategy", "zero3",
           "--topology", "node=4,world=2", "--param-dtype", "bf16", "--steps", str(steps), "--metrics", metrics, "--log-every", "1000",
           "--save-every", str(every), "--save-dir", save_dir, "--keep", "2"] + (["--async-save"] if mode == "async" else [])
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    subprocess.run(["rm", "-rf", save_dir], check=True)
    return [json.loads(l) for l in open(metrics)][1:-1]


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def stalls(rows):
    """(baseline, [stall of each save], [training-thread time in each save's calls]) of one run's counted rows. A save's rows: the one holding its save
    calls (save_s), then those its background writer overlapped (writing)."""
    def touched(r):
        return r["checkpoint"]["save_s"] >= 1e-3 or r["checkpoint"]["writing"]
    quiet = [r["step_time_s"] for r in rows if not touched(r)]
    if len(quiet) < 5:
        sys.exit(f"only {len(quiet)} of {len(rows)} steps are free of saves: raise --every")
    baseline = statistics.median(quiet)
    per_save, blocked = [], []
    for r in rows:
        if r["checkpoint"]["save_s"] >= 1e-3:
            per_save.append(0.0)
            blocked.append(r["checkpoint"]["save_s"])
        elif not r["checkpoint"]["writing"] or not per_save:
            continue
        per_save[-1] += r["step_time_s"] - baseline
    return baseline, per_save, blocked


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tierzero", nargs="?", default=os.path.join(ROOT, "build", "tierzero"))
    ap.add_argument("--steps", type=int, default=65)
    ap.add_argument("--every", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.steps < args.every + 3:
        sys.exit("no save among the counted steps: --steps must be at least --every + 3")
    per_save = {"sync": [], "async": []}
    blocked = {"sync": [], "async": []}
    with tempfile.TemporaryDirectory() as work:
        for k in range(args.rounds):
            for mode in ("sync", "async"):
                baseline, run_stalls, run_blocked = stalls(run(args.tierzero, mode, args.steps, args.every, work))
                per_save[mode] += run_stalls
                blocked[mode] += run_blocked
                print(json.dumps({"round": k, "mode": mode, "model": "gpt-mini", "ranks": 8, "steps": args.steps, "save_every": args.every,
                                  "baseline_step_s": baseline, "stall_per_save_s": run_stalls, "blocked_per_save_s": run_blocked}),
                      flush=True)
    med = {mode: statistics.median(v) for mode, v in per_save.items()}
    med_blocked = {mode: statistics.median(v) for mode, v in blocked.items()}
    print(json.dumps({"sync_stall_per_save_s": med["sync"], "async_stall_per_save_s": med["async"],
                      "async_over_sync_stall": med["async"] / med["sync"],
                      "sync_blocked_per_save_s": med_blocked["sync"], "async_blocked_per_save_s": med_blocked["async"],
                      "async_over_sync_blocked": med_blocked["async"] / med_blocked["sync"],
                      "saves": len(per_save["sync"]), "rounds": args.rounds, "cpu": cpu_model(), "target": 0.20}))


if __name__ == "__main__":
    sys.exit(main())
