#!/usr/bin/env python3
"""Fits the simulator's fitted constants once, on the fitting half of the
corpus of published runs (data/published-runs.toml), and prints them as the
override file `tierzero validate --override` takes, with the fitting half's
and the checking half's summaries under them. The values go into
data/devices/*.toml and data/engines/*.toml by hand, each with its source
("fitted once by bench/fit_simulator.py"); docs/simulator.md lists them with
the runs they were fitted on.

The fit itself is `tierzero validate --fit` (src/sim/corpus_fit.cc, where
the constants, their bounds and the objective are): one value per GPU type
or engine, never per run; the objective median |error| + 0.5 x the 90th
percentile + 0.25 x the 97th over the fitting half's runs with a published
figure; a cyclic coordinate descent from the values in the data files,
deterministic. `tierzero validate --leave-one-source-out` runs the same fit
without each publication in turn.

Usage: bench/fit_simulator.py [--tierzero build/tierzero] [--cycles 4]
"""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tierzero", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "tierzero"))
    ap.add_argument("--cycles", type=int, default=4)
    args = ap.parse_args()
    sys.exit(subprocess.run([args.tierzero, "validate", "--fit", "--fit-cycles", str(args.cycles)]).returncode)


if __name__ == "__main__":
    main()
