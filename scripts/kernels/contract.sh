#!/bin/sh
# Runs the kernel-contract suite (test/kernel_contract.filter) of the build
# BUILD_DIR, in a VM of scripts/kernels.sh, from the top of the clone:
#   bash scripts/kernels.sh -- sh scripts/kernels/contract.sh BUILD_DIR
# gtest's XML report goes to $EVENTFS_RESULTS/contract.xml (counted by
# scripts/run-tests.sh). The time limits scale by EVENTFS_TEST_TIME_SCALE
# (default 6 here: TCG runs several times slower than the host).
build=${1:?usage: contract.sh BUILD_DIR}
release=$(uname -r)
# The filter's patterns for this kernel: the plain lines, and those of
# "before X.Y:" lines where this kernel is older than X.Y.
filter=$(awk -v rel="$release" '
  function older(v,   a, b) {
    split(rel, a, /[.-]/); split(v, b, ".")
    return a[1] + 0 < b[1] + 0 || (a[1] + 0 == b[1] + 0 && a[2] + 0 < b[2] + 0)
  }
  /^#/ || NF == 0 { next }
  $1 == "before" { v = $2; sub(/:$/, "", v); if (!older(v)) next; $1 = $2 = "" }
  { p = $0; gsub(/ /, "", p); if (p ~ /^-/) neg = neg ":" substr(p, 2); else pos = pos ":" p }
  END { printf "%s", substr(pos, 2); if (neg != "") printf "-%s", substr(neg, 2) }
' test/kernel_contract.filter)
export EVENTFS_TEST_TIME_SCALE=${EVENTFS_TEST_TIME_SCALE:-6}
echo "kernel $release, time scale $EVENTFS_TEST_TIME_SCALE, filter $filter"

# The suite writes to the VM's own disk, and a copy follows it to the
# output on the results share; when the suite's output stops for 3 minutes
# (a test waiting for ever), what every task waits on goes to the console
# (which qemu writes to console.log on the host whatever happens to the
# share) and to stalled.txt, once per stall.
log=/tmp/contract-output.log
: >"$log"
watch_stalls() {
  last=-1 still=0
  while sleep 30; do
    size=$(wc -c <"$log")
    if [ "$size" != "$last" ]; then
      last=$size still=0
      continue
    fi
    still=$((still + 30))
    [ $still -eq 180 ] || continue
    {
      echo "=== no output for $still s, at $(tail -n 1 "$log")"
      ps -eLo pid,tid,stat,wchan:32,comm
      for p in $(pgrep -f 'eventfs|integration_tests'); do
        for t in /proc/$p/task/*; do
          echo "--- $p $(cat "$t/comm" 2>/dev/null) $t"
          cat "$t/stack" 2>/dev/null
        done
      done
    } >/tmp/stalled.txt 2>&1
    cat /tmp/stalled.txt >/dev/console
    cat /tmp/stalled.txt >>"$EVENTFS_RESULTS/stalled.txt"
  done
}
watch_stalls &
watcher=$!
tail -f "$log" &
follower=$!
# FirstUse first, alone: it wants the kernel's rings as booted, before any
# other test uses tracing (test/integration/first_use_test.cc).
"$build/test/integration/integration_tests" --gtest_filter='FirstUse.*' \
  --gtest_output="xml:/tmp/first-use.xml" >"$log" 2>&1
first=$?
"$build/test/integration/integration_tests" --gtest_filter="$filter" \
  --gtest_output="xml:/tmp/contract.xml" >>"$log" 2>&1
rc=$?
sleep 1
kill $watcher $follower 2>/dev/null
# One report: FirstUse's suite joins the contract suite's.
python3 - /tmp/contract.xml /tmp/first-use.xml <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    main = ET.parse(sys.argv[1])
    first = ET.parse(sys.argv[2]).getroot()
except (OSError, ET.ParseError) as e:
    sys.exit(f"contract.sh: cannot join the reports: {e}")
for suite in first.iter("testsuite"):
    main.getroot().insert(0, suite)
main.write(sys.argv[1])
PY
cp /tmp/contract.xml "$EVENTFS_RESULTS/contract.xml"
[ $first -eq 0 ] || rc=$first
exit $rc
