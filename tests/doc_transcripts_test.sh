#!/usr/bin/env bash
# A page's transcripts are what the CLI prints: in every ``` block of each
# Markdown file given, a line "$ tierzero ARGS" is run (the binary under
# test) and its output, stdout then stderr, must equal the lines after it up
# to the next "$ " line or the block's end, exactly, but that a line "..."
# stands for any number of lines the page leaves out (an excerpt). A page
# whose figures went stale (a model change, a new column) fails, naming the
# command and its first differing line. --only REGEX checks only the
# commands that match it, --skip REGEX all others (the quick tier skips the
# minute-long ones, the slow tier runs them).
# Usage: doc_transcripts_test.sh TIERZERO [--only REGEX | --skip REGEX] PAGE...
set -euo pipefail
tz=$1
shift
python3 - "$tz" "$@" <<'PY'
import re, subprocess, sys
tz, pages = sys.argv[1], sys.argv[2:]
only = skip = None
if pages and pages[0] in ("--only", "--skip"):
    only, skip = (pages[1], None) if pages[0] == "--only" else (None, pages[1])
    pages = pages[2:]

def matches(want, got):
    """Whether got's lines are want's, each "..." in want standing for any run of lines."""
    if not want:
        return not got
    if want[0] == "...":
        return any(matches(want[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and got[0] == want[0] and matches(want[1:], got[1:])

checked = differ = 0
for page in pages:
    lines = open(page).read().split("\n")
    i, block = 0, False
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            block = not block
        elif block and line.startswith("$ tierzero "):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```") and not lines[j].startswith("$ "):
                j += 1
            want = lines[i + 1:j]
            if (only and not re.search(only, line)) or (skip and re.search(skip, line)):
                i = j
                continue
            run = subprocess.run([tz] + line.split()[2:], capture_output=True, text=True)
            got = (run.stdout + run.stderr).rstrip("\n").split("\n")
            checked += 1
            if not matches(want, got):
                differ += 1
                first = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
                print(f"FAIL: {page}:{i + 1}: {line[2:]}")
                print(f"  line {first + 1}: the page says {want[first] if first < len(want) else '(nothing)'!r}")
                print(f"  line {first + 1}: the CLI prints {got[first] if first < len(got) else '(nothing)'!r}")
            i = j
            continue
        i += 1
print(f"{checked} transcripts, {differ} differ")
sys.exit(1 if differ or not checked else 0)
PY
