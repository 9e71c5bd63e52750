#!/usr/bin/env python3
"""Turns the measured collectives of data/measured-collectives/ into system files.

Writes data/systems/frontier-rccl.toml and data/systems/perlmutter-nccl.toml
(the frontier-rccl and perlmutter-nccl presets; CMake embeds them). Each
measured row becomes one achieved-rate point of the level it crossed:

- a one-node row (Frontier's 8 GCDs) a point of the node level, keyed by
  the packages it spans (4), at bandwidth busbw / (GCDs per package);
- a multi-node row a point of the world level, keyed by the nodes it spans,
  at bandwidth busbw / (ranks per node);

where busbw = (g-1)/g x total bytes / time (nccl-tests' bus bandwidth, from
the logged time) and bytes = the per-rank shard, total / g. Dividing by the
ranks that share the level's links is what makes the simulator's ring
(rate = product of the hop's inner fan-outs x the level's rate) give back
the measured time for the measured collective itself. Only the vendor
library's rows (method nccl: RCCL on Frontier, NCCL on Perlmutter) are
used, from the newest dataset of each machine and collective. Checks every
row's logged size and bus bandwidth against the ones it computes.

Usage: scripts/measured_systems.py [--csv FILE] [--out DIR]
"""
import argparse
import csv
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20
SOURCE = ("axonn-ai/sc2025-pccl-reproducer commit 30dec9bd (Singh et al., \"The Big Send-off\", arXiv:2504.18658): "
          "PyTorch torch.distributed {lib}, bf16, one rank per {dev}, mean of the timed iterations; "
          "data/measured-collectives/frontier-perlmutter.csv")

# Per machine: the system's own figures, its levels (name, fan-out, link rate GB/s,
# where the link figure comes from), and the datasets that price each collective.
MACHINES = {
    "frontier-rccl": {
        "machine": "frontier",
        "lib": "RCCL", "dev": "GCD",
        "header": [
            "# Frontier (OLCF) with RCCL's measured all-gather and reduce-scatter rates.",
            "# Memory, peak, HBM and compute figures: the MI250X GCD's (data/devices/mi250x-gcd.toml, with their sources).",
            "# Latencies are 0: the measured rates include them (the package level, unmeasured, is idealised).",
        ],
        "system": {"based_on": "mi250x-gcd"},
        "levels": [
            ("package", 2, 200, "OLCF Frontier User Guide: 4 Infinity Fabric links x 50 GB/s between the GCDs of one MI250X (not measured: link rate)"),
            ("node", 4, 50, "measured: RCCL among the 8 GCDs of one node; link rate from the OLCF Frontier User Guide"),
            ("world", 0, 12.5, "measured: RCCL across 2 to 128 nodes; link rate 4 Slingshot NICs x 25 GB/s per 8 GCDs"),
        ],
        "datasets": {"all_gather": "all_gather_2", "reduce_scatter": "fr_reduce_scatter"},
    },
    "perlmutter-nccl": {
        "machine": "perlmutter",
        "lib": "NCCL", "dev": "GPU",
        "header": [
            "# Perlmutter (NERSC) GPU nodes with NCCL's measured all-gather rates.",
            "# NERSC Perlmutter architecture: 4 A100 (40 GB HBM2, 1.555 TB/s) per node, joined by NVLink 3",
            "# (4 links x 25 GB/s per direction between each pair), 4 Slingshot-11 NICs x 25 GB/s per node.",
            "# Memory, peak, HBM and compute figures: the A100 40GB's (data/devices/a100-40gb.toml, with their sources).",
            "# Only all-gathers were measured on Perlmutter: reduce-scatters are priced at the all-gather's rates.",
            "# Latencies are 0: the measured rates include them (the node level, unmeasured, is idealised).",
        ],
        "system": {"based_on": "a100-40gb"},
        "levels": [
            ("node", 4, 100, "NERSC Perlmutter architecture: 4 NVLink 3 links x 25 GB/s per GPU pair (not measured: link rate)"),
            ("world", 0, 25, "measured: NCCL across 4 to 128 nodes; link rate 4 Slingshot-11 NICs x 25 GB/s per 4 GPUs"),
        ],
        "datasets": {"all_gather": "pm_all_gather_2"},
    },
}


def fail(msg):
    sys.exit(f"measured_systems.py: {msg}")


def points(rows, spec):
    """The achieved-rate points per level name, sorted, from the rows of the spec's datasets."""
    fanout = {name: f for name, f, _, _ in spec["levels"]}
    per_package = fanout.get("package", 1)
    per_node = per_package * fanout["node"]
    out = {"node": [], "world": []}
    for collective, dataset in spec["datasets"].items():
        chosen = [r for r in rows if r["machine"] == spec["machine"] and r["dataset"] == dataset and r["method"] == "nccl"]
        if not chosen:
            fail(f"no rows for {spec['machine']} {dataset}")
        for r in chosen:
            where = f"{r['log']} ({r['ranks']} ranks, {r['size_label_mb']} MiB)"
            if r["collective"] != collective:
                fail(f"{where}: collective {r['collective']}, expected {collective}")
            nodes, ranks = int(r["nodes"]), int(r["ranks"])
            if ranks != nodes * per_node:
                fail(f"{where}: {ranks} ranks on {nodes} nodes is not {per_node} per node")
            total = float(r["size_label_mb"]) * MIB
            seconds = float(r["time_ms"]) * 1e-3
            logged = float(r["logged_size_mb"]) * 1e6
            expect = total if collective == "all_gather" else total / ranks
            if abs(logged - expect) > 0.01 * expect + 1e3:
                fail(f"{where}: logged size {logged:.0f} B, expected {expect:.0f} B")
            busbw = (ranks - 1) / ranks * total / seconds
            if abs(busbw / 1e9 - float(r["busbw_gbs"])) > 0.02 * busbw / 1e9 + 0.006:
                fail(f"{where}: logged bus bandwidth {r['busbw_gbs']} GB/s, computed {busbw / 1e9:.3f}")
            shard = total / ranks
            if nodes == 1:
                point = (collective, ranks, per_node // per_package, shard, busbw / per_package)
                out["node"].append(point)
            else:
                out["world"].append((collective, ranks, nodes, shard, busbw / per_node))
    for level in out.values():
        level.sort()
    return out


def render(name, spec, pts):
    lines = list(spec["header"])
    lines.append(f"# Achieved rates: {SOURCE.format(lib=spec['lib'], dev=spec['dev'])}.")
    lines.append("# Written by scripts/measured_systems.py: edit the script, not this file.")
    lines.append(f'name = "{name}"')
    for k, v in spec["system"].items():
        lines.append(f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}")
    lines.append('collectives = "nccl"')
    for level, fanout, rate, source in spec["levels"]:
        lines.append("")
        lines.append("[[level]]")
        lines.append(f'name = "{level}"')
        lines.append(f"fanout = {fanout}")
        lines.append(f"bandwidth_gbs = {rate}")
        lines.append("latency_us = 0")
        lines.append(f'source = "{source}"')
        if pts.get(level):
            lines.append("achieved = [")
            for collective, ranks, groups, shard, bw in pts[level]:
                lines.append(f'  {{collective = "{collective}", participants = {ranks}, groups = {groups}, '
                             f"bytes = {shard:.0f}, bandwidth_gbs = {bw / 1e9:.9g}}},")
            lines.append("]")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=os.path.join(ROOT, "data", "measured-collectives", "frontier-perlmutter.csv"))
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "systems"))
    args = ap.parse_args()
    try:
        with open(args.csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail(f"cannot read {args.csv}: {e.strerror}")
    need = {"machine", "dataset", "log", "collective", "nodes", "ranks", "method", "size_label_mb", "logged_size_mb", "busbw_gbs", "time_ms"}
    if not rows or not need <= set(rows[0]):
        fail(f"{args.csv}: expected the columns {', '.join(sorted(need))}")
    os.makedirs(args.out, exist_ok=True)
    for name, spec in MACHINES.items():
        text = render(name, spec, points(rows, spec))
        path = os.path.join(args.out, name + ".toml")
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
