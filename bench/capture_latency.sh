#!/usr/bin/env bash
# Capture-to-applied latency of save: triggers against a direct write of the
# variable, in the same run (bench/capture_latency.c says what is timed).
#   bash bench/capture_latency.sh [BUILD_DIR] [ROUNDS]     (root)
# With LOAD=1, under load: a busy loop on every CPU and a storm of small
# read(2)s (sys_enter_read records the save's condition refuses).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_dirs "${1:-}"
rounds=${2:-200}
tracing=/sys/kernel/tracing
work=$(mktemp -d /tmp/eventfs-capbench-XXXXXX)
mnt=$work/mnt
inst=eventfs-cl-$$
mkdir -p "$mnt"
daemon=
load=()
cleanup() {
  for p in "${load[@]}"; do kill "$p" 2>/dev/null || true; done
  if grep -q " $mnt fuse.eventfs " /proc/mounts; then fusermount3 -u "$mnt" || umount -l "$mnt"; fi
  if [ -n "$daemon" ]; then wait "$daemon" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$build/src/eventfs" "$mnt" -f -o "instance=$inst" &
daemon=$!
for _ in $(seq 100); do grep -q " $mnt fuse.eventfs " /proc/mounts && break; sleep 0.05; done
grep -q " $mnt fuse.eventfs " /proc/mounts || { echo "eventfs did not mount" >&2; exit 1; }
if [ "${LOAD:-0}" = 1 ]; then
  for _ in $(seq "$(nproc)"); do
    sh -c 'while :; do :; done' &
    load+=($!)
  done
  dd if=/dev/zero of=/dev/null bs=1 status=none &
  load+=($!)
  echo "under load: $(nproc) busy loops and a read(2) storm"
fi
echo "kernel $(uname -r), $(nproc) CPUs"
"$build/bench/capture_latency" "$mnt" "$tracing/instances/$inst" "$rounds"
