#!/usr/bin/env python3
"""llama-mini against gpt-mini, the same size (10.82M and 10.84M parameters),
side by side in one run, one JSON line on stdout:

  speed: `tierzero bench step` of each on one thread (B 8, T 256), rounds
         interleaved; the median model TFLOPS of each and their ratio
         (target: llama-mini >= 0.85 x gpt-mini);
  quality: each trained on the built-in corpus (one rank, one thread each,
         both at once) with the same steps, batch and schedule, the
         held-out loss every --eval-every steps (both curves), and the
         final held-out losses' ratio (target: within 5%).

Usage: bench/llama_vs_gpt.py [--tierzero build/tierzero] [--rounds 3] [--steps 300]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def step_tflops(tz, model, env):
    out = subprocess.run([tz, "bench", "step", "--model", model, "--threads", "1", "--steps", "3", "--micro-batch", "8",
                          "--seq-len", "256"], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["tflops"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tierzero", default="build/tierzero")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--eval-every", type=int, default=50)
    a = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    models = ["gpt-mini", "llama-mini"]
    tflops = {m: [] for m in models}
    for _ in range(a.rounds):
        for m in models:
            tflops[m].append(step_tflops(a.tierzero, m, env))
    median = {m: statistics.median(v) for m, v in tflops.items()}
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for m in models:
            metrics = os.path.join(tmp, m + ".jsonl")
            runs[m] = (metrics, subprocess.Popen(
                [a.tierzero, "train", "--model", m, "--data", "builtin", "--steps", str(a.steps), "--micro-batch", "8",
                 "--seq-len", "256", "--lr", "0.002", "--warmup", "30", "--val-fraction", "0.02", "--eval-every",
                 str(a.eval_every), "--metrics", metrics, "--log-every", "100000"], env=env, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, text=True))
        curves = {}
        for m, (metrics, p) in runs.items():
            _, err = p.communicate()
            if p.returncode != 0:
                raise SystemExit(f"{m} training failed: {err}")
            rows = [json.loads(l) for l in open(metrics)]
            curves[m] = [[r["step"], r["val_loss"]] for r in rows if "val_loss" in r]
    final = {m: c[-1][1] for m, c in curves.items()}
    print(json.dumps({"bench": "llama_vs_gpt", "cpu": cpu_model(), "rounds": a.rounds,
                      "step_tflops": tflops, "median_tflops": median,
                      "llama_vs_gpt_tflops": median["llama-mini"] / median["gpt-mini"], "tflops_target": 0.85,
                      "steps": a.steps, "val_loss_curves": curves, "final_val_loss": final,
                      "llama_vs_gpt_val_loss": final["llama-mini"] / final["gpt-mini"], "val_loss_target": "within 5%"}))


if __name__ == "__main__":
    main()
