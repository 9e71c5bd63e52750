#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit and multi-rank).
# Extra arguments go to ctest (e.g. -L mpi, -R hierarchy).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tz_install
tz_build
tz_mpi_env
# OpenAI's GPT-2 vocabulary for the tokenizer's golden test (skipped without it).
"$TZ_ROOT/scripts/gpt2_vocab.sh" >/dev/null || echo "tierzero: could not fetch the GPT-2 vocabulary; its tests will be skipped"
"$TZ_ROOT/scripts/hf_tokenizers.sh" >/dev/null || echo "tierzero: could not fetch the Llama 3 and Qwen3 tokenizer.json; their tests will be skipped"
cd "$TZ_BUILD"
ctest --output-on-failure -j "$(nproc)" "$@"
