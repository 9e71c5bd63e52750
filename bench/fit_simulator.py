#!/usr/bin/env python3
"""Fits the simulator's fitted constants once, on the fitting half of the
corpus of published runs (data/published-runs.toml), and prints them as the
override file `tierzero validate --override` takes, with the fitting half's
and the checking half's errors under them. The values go into
data/devices/*.toml and data/engines/*.toml by hand, each with its source
("fitted once by bench/fit_simulator.py"); docs/simulator.md lists them with
the runs they were fitted on.

Fitted (one value per GPU type or engine, never per run):
  a100_gemm      gemm_efficiency of the A100 (a100-80gb and a100-40gb: one chip)
  a100_short_k   short_k of the A100
  h100_gemm      gemm_efficiency of the H100 (h100-sxm; the H200 and GH200 are the same chip)
  h100_short_k   short_k of the H100
  h100_fp8       gemm_fp8_efficiency of the H100
  triton         the Triton FlashAttention kernel's rate as a fraction of FlashAttention-2's
  torch_ew       elementwise_traffic of PyTorch's eager kernels (fsdp, and fsdp2 and deepspeed through it)
  fsdp_overlap   overlap_backward = overlap_reduce of FSDP1
  fsdp2_overlap  the same of FSDP2
  slowdown       overlap_slowdown of the PyTorch engines (fsdp, fsdp2, deepspeed)

The objective: median |error| + 0.5 x the 90th percentile + 0.25 x the
97th, over the fitting half's trained runs; a cyclic coordinate descent from
the values in the data files (each constant tried at 9 points across a
window that halves every cycle): deterministic, so a rerun gives the same values.

Usage: bench/fit_simulator.py [--tierzero build/tierzero] [--cycles 4]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

# name: (low, high, start)
PARAMS = {
    "a100_gemm": (0.5, 0.869, 0.8003),
    "a100_short_k": (0.0, 1024.0, 176.0),
    "h100_gemm": (0.4, 0.803, 0.7035),
    "h100_short_k": (0.0, 1024.0, 96.0),
    "h100_fp8": (0.2, 0.709, 0.436),
    "triton": (0.2, 1.0, 0.537),
    "torch_ew": (1.0, 4.0, 2.2469),
    "fsdp_overlap": (0.0, 1.0, 0.5632),
    "fsdp2_overlap": (0.0, 1.0, 0.0),
    "slowdown": (0.0, 0.6, 0.3564),
}
# FlashAttention-2's rates on each device (data/devices), the base of the Triton kernel's.
FA2 = {"a100-80gb": (0.73, 0.63, 400), "h100-sxm": (0.349, 0.30, 330)}


def override(v):
    lines = []
    for dev in ("a100-80gb", "a100-40gb"):
        lines += [f"[devices.{dev}]", f"gemm_efficiency = {v['a100_gemm']:.4f}", f"short_k = {v['a100_short_k']:.1f}"]
        f, b, s0 = FA2["a100-80gb"]
        lines += ["[[devices." + dev + ".attention]]", 'implementation = "flash2"', f"forward = {f}", f"backward = {b}",
                  f"half_seq = {s0}", "small_head = 0.89",
                  "[[devices." + dev + ".attention]]", 'implementation = "triton"', f"forward = {f * v['triton']:.4f}",
                  f"backward = {b * v['triton']:.4f}", f"half_seq = {s0}", "small_head = 0.89"]
    for dev in ("h100-sxm", "h200", "gh200"):
        lines += [f"[devices.{dev}]", f"gemm_efficiency = {v['h100_gemm']:.4f}", f"short_k = {v['h100_short_k']:.1f}",
                  f"gemm_fp8_efficiency = {v['h100_fp8']:.4f}"]
    f, b, s0 = FA2["h100-sxm"]
    lines += ["[[devices.h100-sxm.attention]]", 'implementation = "flash2"', f"forward = {f}", f"backward = {b}", f"half_seq = {s0}",
              "small_head = 0.89", "[[devices.h100-sxm.attention]]", 'implementation = "cudnn"', "forward = 0.561", "backward = 0.47",
              "half_seq = 370", "small_head = 0.89", "[[devices.h100-sxm.attention]]", 'implementation = "triton"',
              f"forward = {f * v['triton']:.4f}", f"backward = {b * v['triton']:.4f}", f"half_seq = {s0}", "small_head = 0.89"]
    lines += ["[engines.fsdp]", f"elementwise_traffic = {v['torch_ew']:.4f}", f"overlap_backward = {v['fsdp_overlap']:.4f}",
              f"overlap_reduce = {v['fsdp_overlap']:.4f}", f"overlap_slowdown = {v['slowdown']:.4f}",
              "[engines.fsdp2]", f"elementwise_traffic = {v['torch_ew']:.4f}", f"overlap_backward = {v['fsdp2_overlap']:.4f}",
              f"overlap_reduce = {v['fsdp2_overlap']:.4f}", f"overlap_slowdown = {v['slowdown']:.4f}",
              "[engines.deepspeed]", f"elementwise_traffic = {v['torch_ew']:.4f}", f"overlap_slowdown = {v['slowdown']:.4f}"]
    return "\n".join(lines) + "\n"


def errors(tz, v, half):
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(override(v))
        path = f.name
    try:
        out = subprocess.run([tz, "validate", "--json", "--half", half, "--override", path], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    rows = [json.loads(line) for line in out.splitlines()]
    return [r["error"] for r in rows if "id" in r and r["error"] is not None], [r for r in rows if "half" in r and "id" not in r]


def score(errs):
    a = sorted(abs(e) for e in errs)
    return statistics.median(a) + 0.5 * a[int(0.9 * (len(a) - 1))] + 0.25 * a[int(0.97 * (len(a) - 1))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tierzero", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "tierzero"))
    ap.add_argument("--cycles", type=int, default=4)
    args = ap.parse_args()
    best = {k: p[2] for k, p in PARAMS.items()}
    best_score = score(errors(args.tierzero, best, "fit")[0])
    # Cyclic coordinate descent: each constant in turn tried at 9 points across a window around its value (clipped to its
    # bounds), the window halved every cycle; deterministic.
    width = {k: (p[1] - p[0]) / 2 for k, p in PARAMS.items()}
    for cycle in range(args.cycles):
        for k in sorted(PARAMS):
            lo, hi, _ = PARAMS[k]
            for i in range(9):
                cand = dict(best)
                cand[k] = min(hi, max(lo, best[k] - width[k] + 2 * width[k] * i / 8))
                s = score(errors(args.tierzero, cand, "fit")[0])
                if s < best_score:
                    best, best_score = cand, s
            width[k] /= 2
    print(override(best))
    for half in ("fit", "check"):
        print("#", json.dumps(errors(args.tierzero, best, half)[1][0]))
    print("#", json.dumps({k: round(v, 4) for k, v in best.items()}), "score", round(best_score, 4))


if __name__ == "__main__":
    main()
