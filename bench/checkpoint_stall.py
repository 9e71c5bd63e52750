#!/usr/bin/env python3
"""Training stall per checkpoint, synchronous against --async-save, side by side.

Trains gpt-mini on 8 ranks (zero3, node=4,world=2, bf16) for STEPS steps,
saving every EVERY steps, synchronously and with --async-save, alternately
for ROUNDS rounds. Each run is measured against itself, since runs launched
one after another on shared cores differ by more than a save costs: the
metrics' `checkpoint` object says, per step, how long the training thread
spent in save calls (save_s) and whether a background write overlapped the
step (writing). A step with neither is quiet; the run's baseline is the
median of its quiet steps, and

    stall per save = sum over the other steps of (step_time_s - baseline) / saves

so it holds the whole synchronous save, the asynchronous snapshot, the polls
that complete an asynchronous save and whatever the writer takes from the
steps it overlaps. The first step (warm-up) and the last (whose save must
finish before the run ends, asynchronous or not) are not counted. Prints a
JSON line per run and one with the medians and their ratio.

Usage: bench/checkpoint_stall.py [TIERZERO] [--steps 33] [--every 8] [--rounds 3]"""
import argparse
import json
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


def stall(rows, saves):
    """(baseline, stall per save, steps a save touched) of one run's counted rows."""
    quiet = [r["step_time_s"] for r in rows if r["checkpoint"]["save_s"] < 1e-3 and not r["checkpoint"]["writing"]]
    touched = [r["step_time_s"] for r in rows if r["checkpoint"]["save_s"] >= 1e-3 or r["checkpoint"]["writing"]]
    if len(quiet) < len(rows) // 2:
        sys.exit(f"only {len(quiet)} of {len(rows)} steps are free of saves: raise --every")
    baseline = statistics.median(quiet)
    return baseline, sum(t - baseline for t in touched) / saves, len(touched)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tierzero", nargs="?", default=os.path.join(ROOT, "build", "tierzero"))
    ap.add_argument("--steps", type=int, default=33)
    ap.add_argument("--every", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    saves = (args.steps - 1) // args.every  # the saves among the counted steps 1 .. steps-2
    if saves < 1:
        sys.exit("no save among the counted steps: --steps must exceed --every + 1")
    stalls = {"sync": [], "async": []}
    with tempfile.TemporaryDirectory() as work:
        for k in range(args.rounds):
            for mode in ("sync", "async"):
                baseline, per_save, touched = stall(run(args.tierzero, mode, args.steps, args.every, work), saves)
                stalls[mode].append(per_save)
                print(json.dumps({"round": k, "mode": mode, "model": "gpt-mini", "ranks": 8, "steps": args.steps, "save_every": args.every,
                                  "baseline_step_s": baseline, "steps_touched_per_save": touched / saves, "stall_per_save_s": per_save}),
                      flush=True)
    med = {mode: statistics.median(v) for mode, v in stalls.items()}
    print(json.dumps({"sync_stall_per_save_s": med["sync"], "async_stall_per_save_s": med["async"],
                      "async_over_sync_stall": med["async"] / med["sync"], "rounds": args.rounds, "target": 0.20}))


if __name__ == "__main__":
    sys.exit(main())
