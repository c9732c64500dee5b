#!/usr/bin/env bash
# The kernel matrix stage of scripts/run-tests.sh, on its own:
#   sudo bash scripts/kernels/matrix.sh [BUILD_DIR]       (default: build)
# runs the kernel-contract suite of BUILD_DIR under each kernel of
# scripts/kernels.sh (results in BUILD_DIR/kernels/KERNEL/), then, on the
# host, CrossKernel.* over their stable files and workloads. Writes
# BUILD_DIR/kernels/reports, one "LABEL=XML" line per gtest report to count
# (a kernel without one is named in BUILD_DIR/kernels/missing), and prints
# how long it took. Exit status 0 when everything passed.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
build=${1:-build}
out=$build/kernels
start=$SECONDS
status=0
rm -rf "$out"
mkdir -p "$out"
bash scripts/kernels.sh -o "$out" -t 1200 -e EVENTFS_TEST_TIME_SCALE -- \
  sh scripts/kernels/contract.sh "$build" || status=1
: >"$out/reports"
: >"$out/missing"
for k in $(bash scripts/kernels.sh -l); do
  if [ -s "$out/$k/contract.xml" ]; then
    echo "kernel $k=$out/$k/contract.xml" >>"$out/reports"
  else
    echo "kernel $k: no test report" >&2
    echo "$k" >>"$out/missing"
    status=1
  fi
done
# Cross-kernel identity, on the host: every kernel's stable files and
# recorded workload (written by CrossKernelDump in its VM) against this
# kernel's.
EVENTFS_KERNEL_RESULTS=$top/$out "$build/test/integration/integration_tests" \
  --gtest_filter='CrossKernel.*' --gtest_output="xml:$out/identity.xml" >"$out/identity.log" 2>&1 || status=1
grep -E '^\[  (FAILED|PASSED) |Failure|identity\]' "$out/identity.log" | head -20
[ -s "$out/identity.xml" ] && echo "cross-kernel identity=$out/identity.xml" >>"$out/reports"
echo "=== kernel matrix: $((SECONDS - start)) s"
exit $status
