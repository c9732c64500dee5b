#!/usr/bin/env bash
# Quick start: install, build, mount eventfs and show it working: the
# stable events, a stable format, and live sched_switch records.
#   sudo bash scripts/quickstart.sh [MOUNTPOINT]     (default /mnt/events)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mnt=${1:-/mnt/events}

bash "$top/scripts/deps.sh"
bash "$top/scripts/build.sh" build

mkdir -p "$mnt"
if grep -q " $mnt fuse.eventfs " /proc/self/mountinfo; then
  fusermount3 -u "$mnt"
fi
"$top/build/src/eventfs" "$mnt"

echo "eventfs is mounted at $mnt ($(grep " $mnt " /proc/self/mountinfo | sed 's/.* - //' | cut -d' ' -f1))"
echo
echo "\$ ls $mnt"
ls "$mnt"
echo
echo "\$ cat $mnt/available_events"
cat "$mnt/available_events"
echo
echo "\$ cat $mnt/sched_switch/format"
cat "$mnt/sched_switch/format"
echo
echo "\$ cat $mnt/raw/sched/sched_switch/format     # the raw event, same language"
cat "$mnt/raw/sched/sched_switch/format"
echo
echo "\$ echo 1 > $mnt/sched_switch/enable; cat $mnt/trace_pipe     # live events (first lines)"
echo 1 > "$mnt/sched_switch/enable"
timeout 2 cat "$mnt/trace_pipe" | head -n 8 || true
echo 0 > "$mnt/sched_switch/enable"
echo
echo "Unmount with: fusermount3 -u $mnt"
