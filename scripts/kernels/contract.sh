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
exec "$build/test/integration/integration_tests" --gtest_filter="$filter" \
  --gtest_output="xml:$EVENTFS_RESULTS/contract.xml"
