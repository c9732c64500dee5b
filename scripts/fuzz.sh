#!/usr/bin/env bash
# Builds the libFuzzer targets of test/fuzz with clang (ASan+UBSan, in
# build-fuzz) and runs each for SECONDS (default 60) on a fresh copy of its
# seed corpus (test/fuzz/corpus is never written to).
#   bash scripts/fuzz.sh [SECONDS]
# Prints one line per target, "fuzz <target>: ok, N execs" or
# "fuzz <target>: FAILED (crash file ...)", and exits non-zero if any failed.
# Crash inputs and the failing runs' logs are kept in build-fuzz/artifacts.
# Needs clang and its runtime libraries (scripts/deps.sh installs them).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

secs=${1:-60}
if ! [[ $secs =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [SECONDS]" >&2
  exit 2
fi
targets=(catalog trigger_filter subbuf_walk dat_header)
# The longest input each is given: within what its fuzzer accepts.
declare -A max_len=([catalog]=8192 [trigger_filter]=4095 [subbuf_walk]=8192 [dat_header]=16384)
dir=build-fuzz
artifacts=$top/$dir/artifacts

for tool in clang clang++; do
  if ! command -v "$tool" >/dev/null; then
    echo "fuzz: $tool not found (bash scripts/deps.sh installs it)" >&2
    exit 1
  fi
done

log=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$log" "$work"' EXIT

if [ ! -f "$dir/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$dir" -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=true \
    >"$log" 2>&1 || { cat "$log" >&2; echo "fuzz: meson setup failed" >&2; exit 1; }
elif ! grep -q "fuzz_${targets[0]}" "$dir/build.ninja"; then
  # A build directory configured before, without the fuzzers.
  meson configure "$dir" -Dfuzz=true >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
fi
# Only the fuzzers (and the instrumented library they link).
ninja -C "$dir" "${targets[@]/#/test/fuzz/fuzz_}" >"$log" 2>&1 ||
  { grep -E -A5 'error|FAILED' "$log" | head -60 >&2; echo "fuzz: build failed" >&2; exit 1; }

mkdir -p "$artifacts"
status=0
for t in "${targets[@]}"; do
  corpus=$work/$t
  cp -r "test/fuzz/corpus/$t" "$corpus"
  dict=()
  [ -f "test/fuzz/$t.dict" ] && dict=(-dict="test/fuzz/$t.dict")
  out=$work/$t.log
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
    "$dir/test/fuzz/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len="${max_len[$t]}" \
      -print_final_stats=1 -artifact_prefix="$artifacts/$t-" "${dict[@]}" "$corpus" >"$out" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$out" | tail -1)
  crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$out" | tail -1)
  if [ $rc -eq 0 ] && [ -z "$crash" ]; then
    echo "fuzz $t: ok, ${execs:-0} execs"
  else
    cp "$out" "$artifacts/$t.log"
    echo "fuzz $t: FAILED (crash file ${crash:-none, exit status $rc}; log $artifacts/$t.log)"
    # The report: what went wrong, and where.
    grep -E -m1 -A25 'ERROR: |runtime error|check failed|Check failed' "$out" | head -40 >&2
    status=1
  fi
done
exit $status
