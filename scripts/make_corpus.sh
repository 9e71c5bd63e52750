#!/usr/bin/env bash
# Regenerates data/kjv.txt, the built-in training corpus, from Debian's
# bible-kjv package: the King James Version text, one verse per line,
# without the verse labels.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v bible >/dev/null || { apt-get update -q && apt-get install -y -q bible-kjv; }
bible -f "Gen1:1-Rev22:21" | sed -E 's/^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ //' > data/kjv.txt
wc -c data/kjv.txt
