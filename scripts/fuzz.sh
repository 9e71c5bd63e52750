#!/usr/bin/env bash
# Fuzzes every parser of outside input (tests/fuzz/parsers_fuzz.cc): builds
# the libFuzzer target with clang, AddressSanitizer and UBSan in
# build-fuzz/, then runs one campaign per parser over its seed corpus (tests/fuzz/corpus/NAME)
# for RUNS inputs (default 20000, what CI runs) or, with --seconds S, for S
# seconds each. Prints executions and findings per parser; exits 1 when any
# parser crashed, hung (10 s per input), leaked or went past 2 GB.
#   scripts/fuzz.sh [RUNS | --seconds S]
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tz_install clang libclang-rt-14-dev
limit=(-runs="${1:-20000}")
[ "${1:-}" = "--seconds" ] && limit=(-max_total_time="${2:?give the seconds}")
build="$TZ_ROOT/build-fuzz"
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$TZ_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTZ_BUILD_FUZZ=ON \
    -DTZ_BUILD_TESTS=OFF -DTZ_WITH_CUDA=OFF -DTZ_WITH_NCCL=OFF >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target fuzz_parsers
fuzzer="$build/tests/fuzz/fuzz_parsers"
# The parsers, as the fuzzer lists them when TZ_FUZZ_PARSER names none (its kParsers: one list, not two).
read -r -a parsers <<< "$(env -u TZ_FUZZ_PARSER "$fuzzer" 2>&1 | sed -n "s/^fuzz_parsers: set TZ_FUZZ_PARSER to one of: \(.*\) (got '')$/\1/p")"
[ "${#parsers[@]}" -gt 0 ] || { echo "fuzz.sh: $fuzzer listed no parsers" >&2; exit 1; }
status=0
for p in "${parsers[@]}"; do
  work="$build/corpus-$p"  # the seeds plus what the fuzzer found interesting; the committed seeds stay as they are
  mkdir -p "$work" "$build/findings-$p"
  log="$build/fuzz-$p.log"
  # A timeout is a finding only when its input is slow on its own: on a loaded machine (CI runs this beside
  # multi-rank tests on 2 cores) a fast input can overrun 10 s of wall time, which ends the campaign. Such an
  # input, run again alone in time, is set aside and the campaign starts again (at most 3 times).
  for attempt in 1 2 3; do
    rc=0
    TZ_FUZZ_PARSER=$p "$fuzzer" "${limit[@]}" -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/findings-$p/" "$work" "$TZ_ROOT/tests/fuzz/corpus/$p" >"$log" 2>&1 || rc=$?
    grep -q "libFuzzer: timeout" "$log" || break
    slow=$(find "$build/findings-$p" -name 'timeout-*' | head -n 1)
    [ -n "$slow" ] && TZ_FUZZ_PARSER=$p "$fuzzer" -timeout=10 -rss_limit_mb=2048 "$slow" >"$log.alone" 2>&1 || break
    echo "fuzz $p: $(basename "$slow") timed out under load and runs in time alone: not a finding (attempt $attempt)"
    mv "$slow" "$build/corpus-$p-load-timeouts.$(basename "$slow")"
  done
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  findings=$(find "$build/findings-$p" -type f | wc -l)
  printf 'fuzz %-16s %8s inputs  %s findings  exit %s\n' "$p" "${runs:-?}" "$findings" "$rc"
  if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ]; then
    status=1
    grep -m 20 -E "ERROR|SUMMARY|terminate|Test unit written" "$log" || tail -5 "$log"
  fi
done
exit $status
