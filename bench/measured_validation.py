#!/usr/bin/env python3
"""Prices the PCCL paper's two-level collectives from the flat measurements and compares.

For every measured row of the two-level prototype ("hybrid": inside each node,
then across nodes) in data/measured-collectives/frontier-perlmutter.csv, asks
`tierzero collective --system SYSTEM` for the two-level time of the same
collective, ranks and size. The measured system's tables hold only the flat
rows (scripts/measured_systems.py): the intra-node hop is priced from the
one-node rows, the inter-node hop from the multi-node rows. Prints one JSON
object per point, then a Markdown table of predicted/measured per rank count
and size, then a summary (the share within 25%, sizes >= 16 MiB).

Usage: bench/measured_validation.py TIERZERO [--csv FILE]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (system, machine, dataset, method of the two-level rows, collective)
CASES = [
    ("frontier-rccl", "frontier", "all_gather_2", "hybrid", "all_gather"),
    ("frontier-rccl", "frontier", "fr_reduce_scatter", "hybrid", "reduce_scatter"),
    ("perlmutter-nccl", "perlmutter", "pm_all_gather_2", "hybrid-nccl-nccl", "all_gather"),
]


def predict(tierzero, system, collective, ranks, sizes):
    out = subprocess.run([tierzero, "collective", "--system", system, "--collective", collective,
                          "--ranks", ",".join(map(str, ranks)), "--total-mib", ",".join(f"{s:g}" for s in sizes), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return {(j["ranks"], j["total_mib"]): j for j in map(json.loads, out.splitlines())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tierzero")
    ap.add_argument("--csv", default=os.path.join(ROOT, "data", "measured-collectives", "frontier-perlmutter.csv"))
    args = ap.parse_args()
    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    tables = []
    for system, machine, dataset, method, collective in CASES:
        chosen = [r for r in rows if r["machine"] == machine and r["dataset"] == dataset and r["method"] == method and int(r["nodes"]) > 1]
        ranks = sorted({int(r["ranks"]) for r in chosen})
        sizes = sorted({float(r["size_label_mb"]) for r in chosen})
        got = predict(args.tierzero, system, collective, ranks, sizes)
        ratios = {}
        for r in chosen:
            key = (int(r["ranks"]), float(r["size_label_mb"]))
            measured = float(r["time_ms"])
            predicted = got[key]["two_level_ms"]
            ratios[key] = predicted / measured
            print(json.dumps({"system": system, "dataset": dataset, "method": method, "collective": collective, "ranks": key[0],
                              "total_mib": key[1], "measured_ms": measured, "predicted_ms": round(predicted, 4),
                              "predicted_over_measured": round(predicted / measured, 3)}))
        tables.append((system, dataset, method, collective, ranks, sizes, ratios))
    for system, dataset, method, collective, ranks, sizes, ratios in tables:
        print(f"\n{system}: {collective} two-level ({dataset}, {method}), predicted / measured\n")
        print("| ranks | " + " | ".join(f"{s:g} MiB" for s in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        for n in ranks:
            print(f"| {n} | " + " | ".join(f"{ratios[(n, s)]:.2f}" if (n, s) in ratios else "-" for s in sizes) + " |")
        big = [v for (n, s), v in ratios.items() if s >= 16]
        within = sum(1 for v in big if 0.75 <= v <= 1.25)
        print(f"\nsizes >= 16 MiB: {within} of {len(big)} within 25%, median {statistics.median(big):.2f}")
        for lo in (128, 512):
            sel = [v for (n, s), v in ratios.items() if s >= lo]
            print(f"sizes >= {lo} MiB: {sum(1 for v in sel if 0.75 <= v <= 1.25)} of {len(sel)} within 25%, median {statistics.median(sel):.2f}")


if __name__ == "__main__":
    sys.exit(main())
