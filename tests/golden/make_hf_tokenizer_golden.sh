#!/usr/bin/env bash
# Regenerates the Hugging Face tokenizers' golden ids from an independent
# implementation: tests/golden/hf_tok_llama3.u32 and hf_tok_qwen3.u32, the
# ids (little-endian uint32) of tests/golden/bpe_input.txt (the GPT-2
# golden's text) with <|endoftext|> and <|begin_of_text|> inserted, as the
# npm registry's @huggingface/tokenizers 0.2.0 (a JavaScript implementation
# of Hugging Face tokenizers) encodes it without adding special tokens,
# from the tokenizer.json files scripts/hf_tokenizers.sh fetches. Needs
# node and npm; the test itself needs neither.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
files=$("$root/scripts/hf_tokenizers.sh")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm install --silent --no-audit --no-fund @huggingface/tokenizers@0.2.0 >/dev/null)
cat > "$tmp/encode.mjs" <<'JS'
import { readFileSync, writeFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";
const [json, input, output] = process.argv.slice(2);
const tokenizer = new Tokenizer(JSON.parse(readFileSync(json, "utf8")), {});
const { ids } = tokenizer.encode(readFileSync(input, "utf8"), { add_special_tokens: false });
writeFileSync(output, Buffer.from(new Uint32Array(ids).buffer));
console.log(`${output}: ${ids.length} ids`);
JS
# The special tokens of both files, in the text at its first and second
# third (in bytes, moved forward to a character's start), must come out as
# their own ids; tests/tokenizer_test.cc builds the same text.
python3 - "$here/bpe_input.txt" "$tmp/input.txt" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
def cut(at):
    while b[at] & 0xC0 == 0x80:
        at += 1
    return at
one, two = cut(len(b) // 3), cut(2 * len(b) // 3)
open(sys.argv[2], "wb").write(b[:one] + b"<|endoftext|>" + b[one:two] + b"<|begin_of_text|>" + b[two:])
PY
for name in llama3 qwen3; do
  node "$tmp/encode.mjs" "$files/$name/tokenizer.json" "$tmp/input.txt" "$here/hf_tok_$name.u32"
done
