#!/usr/bin/env bash
# Capture-to-applied latency of save: triggers against a direct write of the
# variable, in the same run (bench/capture_latency.c says what is timed).
#   bash bench/capture_latency.sh [BUILD_DIR] [ROUNDS]     (root)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
[ "${build#/}" = "$build" ] && build=$PWD/$build
rounds=${2:-200}
tracing=/sys/kernel/tracing
work=$(mktemp -d /tmp/eventfs-capbench-XXXXXX)
mnt=$work/mnt
inst=eventfs-cl-$$
mkdir -p "$mnt"
daemon=
cleanup() {
  if grep -q " $mnt fuse.eventfs " /proc/mounts; then fusermount3 -u "$mnt" || umount -l "$mnt"; fi
  if [ -n "$daemon" ]; then wait "$daemon" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$build/src/eventfs" "$mnt" -f -o "instance=$inst" &
daemon=$!
for _ in $(seq 100); do grep -q " $mnt fuse.eventfs " /proc/mounts && break; sleep 0.05; done
grep -q " $mnt fuse.eventfs " /proc/mounts || { echo "eventfs did not mount" >&2; exit 1; }
echo "kernel $(uname -r), $(nproc) CPUs"
"$build/bench/capture_latency" "$mnt" "$tracing/instances/$inst" "$rounds"
