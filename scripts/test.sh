#!/usr/bin/env bash
# Installs what is missing, builds, and runs the tests.
#   scripts/test.sh [--all] [CTEST ARGS...]
# By default the quick tier (`ctest -LE slow`): every unit and multi-rank
# correctness test, a few minutes on 2 cores. --all (what .ci/run runs)
# adds the slow tier, the suites labelled `slow` in tests/CMakeLists.txt
# (Slurm, the GPU bundle, the HIP compile, fuzzing, the soak, the emulated
# cluster, the walkthroughs, the pages in Chromium), and builds the CUDA sources too where nvcc is installed. Other
# arguments go to ctest (e.g. -L mpi, -R hierarchy). Ends with the ten
# slowest tests of the run.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tier=(-LE slow)
ctest_args=()
for a in "$@"; do
  if [ "$a" = --all ]; then tier=(); else ctest_args+=("$a"); fi
done
tz_phase install
tz_install
tz_phase build
if [ ${#tier[@]} -eq 0 ]; then tz_build $(tz_gpu_options); else tz_build; fi
tz_mpi_env
# OpenAI's GPT-2 vocabulary for the tokenizer's golden test (skipped without it).
"$TZ_ROOT/scripts/gpt2_vocab.sh" >/dev/null || echo "tierzero: could not fetch the GPT-2 vocabulary; its tests will be skipped"
"$TZ_ROOT/scripts/hf_tokenizers.sh" >/dev/null || echo "tierzero: could not fetch the Mistral, Llama 3 and Qwen3 tokenizer.json files; their tests will be skipped"
tz_phase "tests (${tier[*]:-every tier})"
cd "$TZ_BUILD"
rc=0
ctest --output-on-failure -j "$(nproc)" "${tier[@]}" "${ctest_args[@]}" || rc=$?
tz_slowest_tests "$TZ_BUILD" 10
tz_phase done
exit $rc
