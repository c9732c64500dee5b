#!/usr/bin/env bash
# Install, build and run every test: the normal build, then the same suite
# built with AddressSanitizer and UndefinedBehaviorSanitizer.
#   sudo bash scripts/run-tests.sh
# Ends with a line "N passed, N failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

bash scripts/deps.sh || exit 1

status=0
builds=(build build-asan)
for dir in "${builds[@]}"; do
  args=()
  [ "$dir" = build-asan ] && args=(-Db_sanitize=address,undefined -Db_lundef=false)
  echo "=== $dir"
  if ! bash scripts/build.sh "$dir" "${args[@]}"; then
    echo "build failed in $dir" >&2
    status=1
    continue
  fi
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C "$dir" --print-errorlogs --no-rebuild || status=1
done

# Count test cases (not executables) from meson's JUnit logs.
python3 - "${builds[@]}" <<'PY'
import sys, xml.etree.ElementTree as ET
passed = failed = skipped = 0
for d in sys.argv[1:]:
    try:
        root = ET.parse(f"{d}/meson-logs/testlog.junit.xml").getroot()
    except (OSError, ET.ParseError) as e:
        print(f"{d}: no test log ({e})")
        failed += 1
        continue
    for suite in root.iter("testsuite"):
        cases = list(suite.iter("testcase"))
        for c in cases:
            if c.find("failure") is not None or c.find("error") is not None:
                failed += 1
            elif c.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
count=$?
[ $count -ne 0 ] && status=1
exit $status
