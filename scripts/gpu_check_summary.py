#!/usr/bin/env python3
"""The rows and the table of scripts/gpu_check.sh (it calls this; not run by hand).

  gpu_check_summary.py row --logs DIR --out DIR --name STEP --kind KIND --result R
                           --exit RC --seconds S --limit L --gpus N
      reads the step's log and files in DIR, decides its verdict, appends one
      JSON line to OUT/summary.jsonl, prints the verdict in one line and
      rewrites OUT/gpu_check.md and OUT/gpu_check.json from summary.jsonl
  gpu_check_summary.py verdict --out DIR
      prints the table; exit 0 when every correctness row passed (or was not
      applicable), else 1

Everything read is parsed defensively: a JSON line cut by a step's time
limit, a value that is not a finite number, a missing file: each is skipped
or written as null, never the end of the table. Results: pass, fail,
timeout, na (not applicable: multi_gpu with one GPU); a step's exit 77
(skip) is a failure where nvidia-smi lists a GPU."""
import argparse
import json
import math
import os
import re
import statistics
import sys

# Speed rows' figures: tierzero's against PyTorch's on the same GPU and shapes.
COMPARISONS = [("gpt2_124m", "gpt2_124m_train_tokens_per_s", "pytorch_gpt2_124m_tokens_per_s", "pytorch_gpt2_124m_sdpa_tokens_per_s"),
               ("llama_1b", "llama_1b_train_tokens_per_s", "pytorch_llama_1b_tokens_per_s", "pytorch_llama_1b_sdpa_tokens_per_s")]


def finite(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def json_lines(path):
    """The JSON objects of a file, one per line; cut or malformed lines are skipped."""
    rows = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict):
                    rows.append(row)
    except OSError:
        pass
    return rows


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def last_lines(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:])


def gtest_counts(logs, name):
    """(detail, passed?) of a gtest run from its JSON report, else its log."""
    report = os.path.join(logs, "gpu_tests.json") if name == "gpu_tests" else None
    passed, failed, skipped = [], [], []
    try:
        doc = json.load(open(report)) if report and os.path.exists(report) else None
    except ValueError:
        doc = None
    if doc:
        for suite in doc.get("testsuites", []):
            for t in suite.get("testsuite", []):
                full = f"{suite.get('name')}.{t.get('name')}"
                (failed if t.get("failures") else skipped if t.get("result") == "SKIPPED" else passed).append(full)
        return passed, failed, skipped, None
    log = read(os.path.join(logs, name + ".log"))
    running = None
    for line in log.splitlines():
        m = re.match(r"\[\s*(RUN|OK|FAILED|SKIPPED)\s*\] (\S+)", line)
        if not m:
            continue
        what, test = m.groups()
        if what == "RUN":
            running = test
        else:
            {"OK": passed, "FAILED": failed, "SKIPPED": skipped}[what].append(test)
            running = None if test == running else running
    return passed, failed, skipped, running


def steps_of(path):
    rows = [r for r in json_lines(path) if isinstance(r.get("step"), int)]
    return {r["step"]: r for r in rows}


def training_detail(path, want_steps):
    """(ok, detail, figures) of a training run's metrics."""
    steps = steps_of(path)
    if not steps:
        return False, f"no metrics in {os.path.basename(path)}", {}
    order = sorted(steps)
    losses = [finite(steps[s].get("loss")) for s in order]
    ok = len(order) >= want_steps and all(l is not None for l in losses)
    tps = [finite(steps[s].get("tokens_per_s")) for s in order[5:] or order]
    tps = [t for t in tps if t]
    figures = {"steps": len(order), "first_loss": losses[0], "last_loss": losses[-1],
               "tokens_per_s": statistics.median(tps) if tps else None}
    shares = []
    for s in order[5:] or order:
        b = steps[s].get("breakdown")
        if isinstance(b, list) and b and isinstance(b[0], dict) and finite(b[0].get("step_s")):
            kernels = sum(finite(b[0].get(k)) or 0 for k in ("forward_s", "backward_s", "optimizer_s"))
            shares.append(kernels / b[0]["step_s"])
    if shares:
        figures["compute_share"] = statistics.median(shares)
    detail = f"{len(order)}/{want_steps} steps, loss {losses[0]} -> {losses[-1]}"
    if figures["tokens_per_s"]:
        detail += f", {figures['tokens_per_s']:.0f} tokens/s"
    if shares:
        detail += f", compute {100 * figures['compute_share']:.0f}% of the step (--breakdown)"
    if not ok:
        detail += " (a loss is not finite)" if len(order) >= want_steps else " (too few steps)"
    return ok, detail, figures


def resume_detail(logs):
    full, resumed = steps_of(os.path.join(logs, "train.jsonl")), steps_of(os.path.join(logs, "resume.jsonl"))
    if not resumed:
        return False, "no metrics from the resumed run", {}
    for s in sorted(resumed):
        if s not in full:
            return False, f"step {s} of the resumed run is not in the uninterrupted run's metrics", {}
        if resumed[s].get("loss") != full[s].get("loss"):
            return False, f"step {s}: loss {resumed[s].get('loss')} resumed, {full[s].get('loss')} uninterrupted", {}
    first, last = min(resumed), max(resumed)
    return True, f"steps {first}-{last} resumed: every loss bit for bit the uninterrupted run's", {"resumed_steps": len(resumed)}


def figure_rows(path):
    figures = {}
    for r in json_lines(path):
        if isinstance(r.get("check"), str):
            figures[r["check"]] = {k: (finite(v) if isinstance(v, (int, float)) else v) for k, v in r.items() if k != "check"}
    return figures


def row(a):
    logs, name = a.logs, a.name
    log = read(os.path.join(logs, name + ".log"))
    result, detail, figures = a.result, "", {}
    if result == "skip":
        result = "fail" if a.gpus > 0 else "skip"
        detail = "skipped (exit 77) on a machine that lists a GPU: " if a.gpus > 0 else "skipped: "
        detail += last_lines(log, 1)
    elif result == "timeout":
        detail = f"cut at its limit of {a.limit} s; last output: {last_lines(log)}"
    if name == "devices":
        gpus = [l.split(":", 1)[1].split("(")[0].strip() for l in log.splitlines() if l.startswith("GPU ")]
        libs = [l for l in log.splitlines() if l.startswith(("libcuda.so", "libnvidia-ml.so"))]
        detail = f"{len(gpus)} GPU(s) {', '.join(gpus)}; " + "; ".join(libs) + (f" ({detail})" if detail else "")
        query = [l for l in log.splitlines() if l.count(",") == 3]
        if query:
            figures["nvidia_smi"] = query[0]
    elif name in ("gpu_tests", "multi_gpu") and a.result != "na":
        passed, failed, skipped, running = gtest_counts(logs, name)
        detail = f"{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped" + (f"; {detail}" if detail else "")
        if failed:
            detail += "; failed: " + ", ".join(failed[:8])
        if skipped:
            detail += "; skipped: " + ", ".join(skipped[:8])
        if running:
            detail += f"; stopped inside {running}"
        if result == "pass" and (failed or (skipped and a.gpus > 0) or not passed):
            result = "fail"
        figures = {"passed": len(passed), "failed": failed, "skipped": skipped}
    elif name in ("train", "llama") and result == "pass":
        ok, detail, figures = training_detail(os.path.join(logs, name + ".jsonl"), 30 if name == "train" else 20)
        result = "pass" if ok else "fail"
    elif name == "resume" and result == "pass":
        ok, detail, figures = resume_detail(logs)
        result = "pass" if ok else "fail"
    elif name in ("hf", "bench", "pytorch"):
        figures = figure_rows(os.path.join(logs, name + ".log"))
        shown = ", ".join(f"{k} {v['value']:.4g}" for k, v in figures.items() if isinstance(v.get("value"), (int, float)))
        parts = [p for p in (detail, shown) if p]
        if result != "pass" and not detail:
            parts.append(last_lines(log))
        detail = "; ".join(parts) or "no figures"
    elif a.result == "na":
        detail = last_lines(log, 1)
    if not detail:
        detail = last_lines(log, 2) if result != "pass" else "done"
    entry = {"step": name, "kind": a.kind, "result": result, "exit": a.exit, "seconds": a.seconds, "limit_s": a.limit,
             "detail": detail, "figures": figures}
    with open(os.path.join(a.out, "summary.jsonl"), "a") as f:
        f.write(json.dumps(entry) + "\n")
    print(f"gpu_check: {name}: {result} ({a.seconds} s of {a.limit}): {detail}", flush=True)
    write_table(a.out)


def latest_rows(out):
    rows = {}
    for r in json_lines(os.path.join(out, "summary.jsonl")):
        if isinstance(r.get("step"), str):
            rows.pop(r["step"], None)
            rows[r["step"]] = r
    return list(rows.values())


def comparisons(rows):
    figures = {}
    for r in rows:
        if r["step"] in ("bench", "pytorch", "hf") and isinstance(r.get("figures"), dict):
            figures.update(r["figures"])
    out = {}
    for model, ours, eager, sdpa in COMPARISONS:
        t = (figures.get(ours) or {}).get("value")
        for theirs, label in ((eager, "eager"), (sdpa, "sdpa")):
            p = (figures.get(theirs) or {}).get("value")
            if finite(t) and finite(p) and p > 0:
                out[f"{model}_tierzero_vs_pytorch_{label}"] = t / p
    return figures, out


def write_table(out):
    rows = latest_rows(out)
    figures, ratios = comparisons(rows)
    lines = ["| step | kind | result | seconds | limit | detail |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['step']} | {r.get('kind')} | {r.get('result')} | {r.get('seconds')} | {r.get('limit_s')} | "
                     f"{str(r.get('detail', '')).replace('|', '/')} |")
    if figures:
        lines += ["", "| figure | value | unit | ceiling | ratio |", "|---|---|---|---|---|"]
        for k, f in figures.items():
            if isinstance(f, dict):
                lines.append(f"| {k} | {f.get('value')} | {f.get('unit', '')} | {f.get('ceiling', '')} {f.get('ceiling_of', '')} | "
                             f"{f.get('ratio', f.get('mfu', ''))} |")
    if ratios:
        lines += ["", "| tokens/s, tierzero / PyTorch on the same GPU and shapes | ratio |", "|---|---|"]
        lines += [f"| {k} | {v:.3f} |" for k, v in ratios.items()]
    text = "\n".join(lines) + "\n"
    for fname, body in (("gpu_check.md", text),
                        ("gpu_check.json", json.dumps({"steps": rows, "figures": figures, "ratios": ratios}, indent=1))):
        tmp = os.path.join(out, fname + ".tmp")
        with open(tmp, "w") as f:
            f.write(body)
        os.replace(tmp, os.path.join(out, fname))
    return text


def verdict(a):
    text = write_table(a.out)
    print("\n" + text)
    bad = [r["step"] for r in latest_rows(a.out) if r.get("kind") == "correctness" and r.get("result") not in ("pass", "na")]
    print(f"gpu_check: {'every correctness step passed' if not bad else 'failed: ' + ', '.join(bad)}; "
          f"files in {a.out}: {', '.join(sorted(os.listdir(a.out)))}")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("row")
    for k in ("logs", "out", "name", "kind", "result"):
        r.add_argument("--" + k, required=True)
    for k in ("exit", "seconds", "limit", "gpus"):
        r.add_argument("--" + k, type=int, required=True)
    v = sub.add_parser("verdict")
    v.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.what == "row":
        row(a)
        return 0
    return verdict(a)


if __name__ == "__main__":
    sys.exit(main())
