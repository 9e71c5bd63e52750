#!/usr/bin/env python3
"""Training stall per checkpoint, synchronous against --async-save, side by side.

Trains gpt-mini on 8 ranks (zero3, node=4,world=2, bf16) for STEPS steps
three times: without checkpoints (the baseline), saving every EVERY steps
synchronously, and with --async-save; prints one JSON line per mode and
one with the ratio: stall per save = (sum of the run's step wall times -
steps x the baseline run's median step) / saves, over every step but the
first (warm-up) and the last (whose save must finish before the run
ends, asynchronous or not), where a step's wall time
(the metrics' step_time_s) runs from one step's end to the next one's, so
it holds the save, the snapshot, the polls that complete an asynchronous
save and whatever the background writer takes from training.

Usage: bench/checkpoint_stall.py [TIERZERO] [--steps 24] [--every 4]"""
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
    cmd = ["mpirun", "-np", "8", tz, "train", "--model", "gpt-mini", "--seq-len", "128", "--micro-batch", "1", "--strategy", "zero3",
           "--topology", "node=4,world=2", "--param-dtype", "bf16", "--steps", str(steps), "--metrics", metrics, "--log-every", "1000"]
    if mode != "none":
        cmd += ["--save-every", str(every), "--save-dir", os.path.join(work, mode)] + (["--async-save"] if mode == "async" else [])
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    # The first step warms up; the last one's save must be complete before the run ends (asynchronous or not),
    # so neither is counted.
    return [json.loads(l)["step_time_s"] for l in open(metrics)][1:-1]


def stall(times, baseline, saves):
    return (sum(times) - len(times) * baseline) / saves


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tierzero", nargs="?", default=os.path.join(ROOT, "build", "tierzero"))
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--every", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        times = {mode: run(args.tierzero, mode, args.steps, args.every, work) for mode in ("none", "sync", "async")}
    baseline = statistics.median(times["none"])
    saves = (args.steps - 1) // args.every  # the saves among the counted steps 1 .. steps-2
    out = {}
    for mode in ("sync", "async"):
        out[mode] = stall(times[mode], baseline, saves)
        print(json.dumps({"mode": mode, "model": "gpt-mini", "ranks": 8, "steps": args.steps, "save_every": args.every,
                          "baseline_step_s": baseline, "stall_per_save_s": out[mode]}))
    print(json.dumps({"async_over_sync_stall": out["async"] / out["sync"], "target": 0.20}))


if __name__ == "__main__":
    sys.exit(main())
