#!/usr/bin/env bash
# Install, build and run every test: the normal build, then the same suite
# built with AddressSanitizer and UndefinedBehaviorSanitizer, and with
# ThreadSanitizer; then the fuzzers (scripts/fuzz.sh), where there are some;
# then the kernel-contract suite under Debian's 5.10, 6.1 and 6.12 kernels
# in qemu (scripts/kernels.sh).
#   sudo bash scripts/run-tests.sh
# Ends with a line "N passed, N failed, N skipped": the test cases of the
# normal and ASan+UBSan builds (meson's JUnit logs) and of the kernel
# matrix (gtest's reports), one failed case per process that wrote a
# sanitizer report (TSan's included), and one case per fuzz target.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

bash scripts/deps.sh || exit 1

status=0
extra_passed=0
extra_failed=0
builds=(build build-asan build-tsan)
sanitized=(-Doptimization=1 -Ddebug=false -Dc_args=-g1 -Dcpp_args=-g1)

# gcc 12's ThreadSanitizer runtime expects programs and libraries where its
# memory layout puts them, and stops ("FATAL: ThreadSanitizer: unexpected
# memory mapping") when address randomization maps them elsewhere, as it
# does with vm.mmap_rnd_bits above 28. So the TSan run goes without
# randomization: under setarch -R, which every process it starts inherits
# (the integration tests' daemons too); where personality(2) is refused (a
# container's seccomp filter), with vm.mmap_rnd_bits lowered to 28 for the
# run and restored after it.
tsan_run=()
saved_rnd_bits=
restore_rnd_bits() {
  if [ -n "$saved_rnd_bits" ]; then
    echo "$saved_rnd_bits" >/proc/sys/vm/mmap_rnd_bits
    saved_rnd_bits=
  fi
}
trap restore_rnd_bits EXIT
# Sets tsan_run up; true once `probe`, a program of the TSan build, starts.
prepare_tsan() {
  local probe=$1 bits
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    tsan_run=(setarch "$(uname -m)" -R)
  else
    tsan_run=()
    bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)
    if [ "$bits" -gt 28 ]; then
      if echo 28 >/proc/sys/vm/mmap_rnd_bits 2>/dev/null; then
        saved_rnd_bits=$bits
        echo "(setarch -R refused: vm.mmap_rnd_bits lowered from $bits to 28 for the TSan run)"
      fi
    fi
  fi
  local out
  if ! out=$("${tsan_run[@]}" "$probe" --gtest_list_tests 2>&1); then
    echo "the ThreadSanitizer build cannot run here:" >&2
    echo "$out" | head -5 >&2
    return 1
  fi
}

# Sanitized processes write their reports to files (log_path: PREFIX.PID)
# instead of stderr: the integration tests capture their daemon's stderr
# and look at it in a few tests only, so a report there (a race, a leak at
# exit, an error while the daemon shuts down) would go unnoticed. Every
# non-empty file counts as a failed case.
check_reports() {
  local dir=$1 f
  for f in "$dir"/*; do
    [ -s "$f" ] || continue
    echo "=== sanitizer report: $f"
    cat "$f"
    extra_failed=$((extra_failed + 1))
    status=1
  done
}

for dir in "${builds[@]}"; do
  start=$SECONDS
  args=()
  # The sanitized builds are for their reports: -O1 with line tables only
  # (-g1) keeps every check and a report's file:line stacks, and compiles in
  # less than half the time of -O2 -g (ASan+UBSan most of all).
  case $dir in
    build-asan) args=(-Db_sanitize=address,undefined -Db_lundef=false "${sanitized[@]}") ;;
    build-tsan) args=(-Db_sanitize=thread -Db_lundef=false "${sanitized[@]}") ;;
  esac
  echo "=== $dir"
  rm -f "$dir/meson-logs/testlog.junit.xml"  # (a failed build must not count an older run)
  if ! bash scripts/build.sh "$dir" "${args[@]}"; then
    echo "build failed in $dir" >&2
    status=1
    continue
  fi
  reports=$top/$dir/meson-logs/sanitizer-reports
  rm -rf "$reports"
  mkdir -p "$reports"
  run=()
  apart=
  case $dir in
    build)
      san_env=(UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1) ;;
    build-asan)
      # gcc's UBSan runtime writes its message to stderr whatever log_path
      # says; abort_on_error turns it into an abort, which ASan
      # (handle_abort) reports in the file with the stack of the check that
      # failed. Both need log_path: each runtime parses its own options.
      # LeakSanitizer's suppressions (test/lsan.supp) say why each one is not
      # a leak of eventfs's.
      san_env=(ASAN_OPTIONS=handle_abort=1:log_path=$reports/asan
               LSAN_OPTIONS=suppressions=$top/test/lsan.supp:print_suppressions=0
               UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$reports/asan) ;;
    build-tsan)
      if ! prepare_tsan "$dir/test/unit/unit_tests"; then
        status=1
        restore_rnd_bits
        continue
      fi
      run=("${tsan_run[@]}")
      tsan=halt_on_error=1:second_deadlock_stack=1:exitcode=66:suppressions=$top/test/tsan.supp:log_path=$reports/tsan
      # TSan's deadlock detector stops the process (a CHECK failure) when
      # one thread holds more than 64 mutexes; the stream hub holds one per
      # possible CPU (tracefs's per_cpu/), with a few others, to merge the
      # text stream.
      cpus=$(find /sys/kernel/tracing/per_cpu -maxdepth 1 -name 'cpu*' 2>/dev/null | wc -l)
      if [ "$cpus" -gt 56 ]; then
        tsan+=:detect_deadlocks=0
        echo "($cpus possible CPUs: the TSan run goes without its deadlock detector)"
      fi
      san_env=(TSAN_OPTIONS=$tsan)
      # Run apart, for its sanitizer reports only (its result counts in the
      # other builds): it wants more reads in its second than there are
      # files, a pace the daemon under TSan does not always keep.
      apart=Concurrency.EightThreadsReadingFormatsAllGetTheRightText ;;
  esac
  if [ "$dir" = build-tsan ]; then
    # Under ThreadSanitizer everything runs 5-15 times slower: the suites run
    # for their race reports (each a failed case, below), and what their
    # timing-bound assertions say is printed, not counted (the same
    # assertions count in the other two builds).
    env "${san_env[@]}" ${apart:+GTEST_FILTER=-$apart} "${run[@]}" \
      meson test -C "$dir" --print-errorlogs --no-rebuild ||
      echo "=== $dir: some assertions failed under ThreadSanitizer (not counted; its reports are)"
  else
    env "${san_env[@]}" ${apart:+GTEST_FILTER=-$apart} "${run[@]}" \
      meson test -C "$dir" --print-errorlogs --no-rebuild || status=1
  fi
  if [ -n "$apart" ]; then
    echo "=== $dir: $apart, for sanitizer reports only (output in $dir/meson-logs/apart.txt)"
    env "${san_env[@]}" GTEST_FILTER="$apart" "${run[@]}" "$dir/test/integration/integration_tests" \
      >"$dir/meson-logs/apart.txt" 2>&1
  fi
  restore_rnd_bits
  check_reports "$reports"
  echo "=== $dir: $((SECONDS - start)) s"
done

# The fuzzers: scripts/fuzz.sh prints "fuzz TARGET: ok, N execs" or
# "fuzz TARGET: FAILED ..." for each target.
if [ -f scripts/fuzz.sh ]; then
  echo "=== fuzz"
  start=$SECONDS
  fuzz_out=$(mktemp)
  bash scripts/fuzz.sh 60 | tee "$fuzz_out"
  rc=${PIPESTATUS[0]}
  ok=$(grep -cE '^fuzz [^ ]+: ok' "$fuzz_out")
  bad=$(grep -cE '^fuzz [^ ]+: FAILED' "$fuzz_out")
  rm -f "$fuzz_out"
  if [ "$bad" -eq 0 ] && { [ "$rc" -ne 0 ] || [ "$ok" -eq 0 ]; }; then
    echo "scripts/fuzz.sh failed (exit status $rc) without a failed target" >&2
    bad=1
  fi
  extra_passed=$((extra_passed + ok))
  extra_failed=$((extra_failed + bad))
  [ "$bad" -ne 0 ] && status=1
  echo "=== fuzz: $((SECONDS - start)) s"
fi

# The kernel matrix (scripts/kernels/matrix.sh): the kernel-contract suite
# (test/kernel_contract.filter) of the normal build under each of Debian's
# kernels scripts/kernels.sh boots (5.10, 6.1, 6.12), in qemu, then the
# cross-kernel identity check on the host. Each gtest report counts below
# with the others; a kernel without one counts as one failed case. The
# kernels are cached in /var/cache/eventfs-kernels after the first run.
reports=()
if [ -x build/test/integration/integration_tests ]; then
  echo "=== kernel matrix"
  bash scripts/kernels/matrix.sh build || status=1
  if [ -f build/kernels/reports ] && [ -f build/kernels/missing ]; then
    while IFS= read -r r; do reports+=("$r"); done <build/kernels/reports
    extra_failed=$((extra_failed + $(wc -l <build/kernels/missing)))
  else
    extra_failed=$((extra_failed + 1))
  fi
fi

# Count test cases (not executables) from meson's JUnit logs and the
# matrix's gtest reports.
python3 - "$extra_passed" "$extra_failed" "build=build/meson-logs/testlog.junit.xml" \
  "build-asan=build-asan/meson-logs/testlog.junit.xml" "${reports[@]}" <<'PY'
import sys, xml.etree.ElementTree as ET
passed, failed, skipped = int(sys.argv[1]), int(sys.argv[2]), 0
for arg in sys.argv[3:]:
    name, path = arg.split("=", 1)
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"{name}: no test log ({e})")
        failed += 1
        continue
    p = f = s = 0
    for c in root.iter("testcase"):
        if c.find("failure") is not None or c.find("error") is not None:
            f += 1
        elif c.find("skipped") is not None or c.get("result") == "skipped" or c.get("status") == "notrun":
            s += 1
        else:
            p += 1
    if name.startswith("kernel ") or name.startswith("cross-kernel"):
        print(f"{name}: {p} passed, {f} failed, {s} skipped")
    passed, failed, skipped = passed + p, failed + f, skipped + s
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
count=$?
[ $count -ne 0 ] && status=1
exit $status
