#!/usr/bin/env bash
# Regenerates the Hugging Face tokenizers' golden ids from an independent
# implementation: tests/golden/hf_tok_NAME.u32, the ids (little-endian
# uint32) of tests/golden/bpe_input.txt (the GPT-2 golden's text) with two
# special tokens inserted at its thirds, as the npm registry's
# @huggingface/tokenizers 0.2.0 (a JavaScript implementation of Hugging
# Face tokenizers) encodes it without adding special tokens, from the
# tokenizer.json files scripts/hf_tokenizers.sh fetches:
#   llama3, qwen3       <|endoftext|> and <|begin_of_text|> inserted
#   mistral             </s> and <s> inserted (Mistral 7B's byte-fallback
#                       file, Llama 2's format: Prepend + Replace normalizer)
#   mistral_metaspace   the same vocabulary as transformers' non-legacy
#                       conversion writes it (no normalizer, Metaspace
#                       "first" without splitting), on the text's first
#                       72000 bytes in thirds joined by "</s> " and "<s>"
# tests/tokenizer_test.cc builds the same texts. Needs node and npm; the
# test itself needs neither.
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
const [json, input, output, variant] = process.argv.slice(2);
const config = JSON.parse(readFileSync(json, "utf8"));
if (variant === "metaspace") {
  config.normalizer = null;
  config.pre_tokenizer = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false };
}
const tokenizer = new Tokenizer(config, {});
const { ids } = tokenizer.encode(readFileSync(input, "utf8"), { add_special_tokens: false });
writeFileSync(output, Buffer.from(new Uint32Array(ids).buffer));
console.log(`${output}: ${ids.length} ids`);
JS
# The cuts are in bytes, moved forward to a character's start.
python3 - "$here/bpe_input.txt" "$tmp" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
def cut(at):
    while b[at] & 0xC0 == 0x80:
        at += 1
    return at
one, two = cut(len(b) // 3), cut(2 * len(b) // 3)
for name, first, second in (("bpe", b"<|endoftext|>", b"<|begin_of_text|>"), ("sp", b"</s>", b"<s>")):
    open(f"{sys.argv[2]}/{name}.txt", "wb").write(b[:one] + first + b[one:two] + second + b[two:])
a, c, e = cut(24000), cut(48000), cut(72000)
open(f"{sys.argv[2]}/metaspace.txt", "wb").write(b[:a] + b"</s> " + b[a:c] + b"<s>" + b[c:e])
PY
for name in llama3 qwen3; do
  node "$tmp/encode.mjs" "$files/$name/tokenizer.json" "$tmp/bpe.txt" "$here/hf_tok_$name.u32"
done
node "$tmp/encode.mjs" "$files/mistral/tokenizer.json" "$tmp/sp.txt" "$here/hf_tok_mistral.u32"
node "$tmp/encode.mjs" "$files/mistral/tokenizer.json" "$tmp/metaspace.txt" "$here/hf_tok_mistral_metaspace.u32" metaspace
