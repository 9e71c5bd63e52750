#!/usr/bin/env bash
# Regenerates the GPT-2 tokenizer's golden files from an independent
# implementation: tests/golden/bpe_input.txt (make_bpe_text.py) and
# tests/golden/bpe_ids.u16, its ids (little-endian uint16) from the npm
# registry's js-tiktoken 1.0.21, getEncoding("gpt2"), special tokens read as
# ordinary text. Needs node and npm; the test itself needs neither.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/make_bpe_text.py" "$root/data/kjv.txt" "$here/bpe_input.txt"
(cd "$tmp" && npm install --silent --no-audit --no-fund js-tiktoken@1.0.21 >/dev/null)
cat > "$tmp/encode.mjs" <<'JS'
import { readFileSync, writeFileSync } from "node:fs";
import { getEncoding } from "js-tiktoken";
const [input, output] = process.argv.slice(2);
const ids = getEncoding("gpt2").encode(readFileSync(input, "utf8"), [], []);
const out = new Uint16Array(ids);
writeFileSync(output, Buffer.from(out.buffer));
console.log(`${output}: ${ids.length} ids`);
JS
node "$tmp/encode.mjs" "$here/bpe_input.txt" "$here/bpe_ids.u16"
