#!/usr/bin/env bash
# Where eventfs reports a slow reader's loss (issue 23 item 3): a storm of
# COUNT numbered markers on one CPU while one reader takes that CPU's
# per_cpu/cpuN/trace_pipe_raw READ_KB at a time with PAUSE_MS between reads
# (bench/loss_marks.c), ROUNDS times, each on a fresh mount. Prints, for
# each round, the misplaced lost-events records (target 0: gaps whose
# records add up to another count, gaps without one, records where nothing
# is missing) beside eventfs's "dropped by eventfs" and "lost events" and
# the kernel's overrun for that CPU.
#   bash bench/loss_marks.sh [BUILD_DIR]     (root)
# Environment: ROUNDS (default 5), COUNT (markers, default 300000),
# READ_KB (default 1024), PAUSE_MS (default 20), PROJECTIONS (stable events
# over the marker's raw event, default 1), RATE (markers a second, default
# as fast as the writer can), QUEUE_KB (eventfs -o queue_kb,
# default eventfs's), BUFFER_KB (the instance's ring, default 65536, so
# that the loss is eventfs's own), CPU (default 1 when there are two).
# A measurement: it exits 0 whatever the figures.
# Measured 2026-12-03 (2 cores, shared; misplaced records a round, 5 rounds):
#   RATE=600000 COUNT=2000000:               before 2 4 8 0 10 (174 gaps), after 0 0 0 0 0 (453 gaps)
#   PROJECTIONS=2 RATE=300000 COUNT=1000000: before 12 4 6 6 18 (200 gaps), after 0 0 0 0 0 (245 gaps)
# ("before": the daemon of the commit before issue 23 item 3's fix; every
# loss was eventfs's own: kernel overrun 0, lost events 0. At full speed
# the queue overflows between every two reads, every read is a copy with
# its gap first, and nothing was misplaced before either.)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_dirs "${1:-}"
tracing=/sys/kernel/tracing
rounds=${ROUNDS:-5} count=${COUNT:-300000} read_kb=${READ_KB:-1024} pause_ms=${PAUSE_MS:-20}
projections=${PROJECTIONS:-1} buffer_kb=${BUFFER_KB:-65536}
cpu=${CPU:-$(($(nproc) > 1 ? 1 : 0))}
inst=eventfs-lm-$$

work=$(mktemp -d /tmp/eventfs-loss-marks-XXXXXX)
mnt=$work/mnt
daemon=
cleanup() {
  set +e
  if grep -q " $mnt fuse.eventfs " /proc/mounts; then fusermount3 -u "$mnt"; fi
  if [ -n "$daemon" ]; then  # it removes its instance as it exits
    for _ in $(seq 100); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.05; done
    kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null
  fi
  daemon=
}
trap 'cleanup; rm -rf "$work"' EXIT INT TERM
mkdir -p "$mnt"
{
  cat "$top/src/catalog/default.catalog"
  for i in $(seq 0 $((projections - 1))); do
    printf 'STABLE_EVENT(lm_marker%d, ftrace:print, id=%d,\n\t__array(char, text, 64) = buf\n)\n' "$i" $((1000 + i))
  done
} > "$work/lm.catalog"

stat_of() { sed -n "s/^$2: *//p" "$1" | head -1; }

echo "loss_marks: $rounds rounds of $count markers on CPU $cpu, $projections stable event(s) each;" \
  "at ${RATE:-full} markers/s; reads of $read_kb KiB, $pause_ms ms apart; queue_kb=${QUEUE_KB:-default}, ring $buffer_kb KiB"
for round in $(seq "$rounds"); do
  "$build/src/eventfs" "$mnt" -f -o "instance=$inst,catalog=$work/lm.catalog${QUEUE_KB:+,queue_kb=$QUEUE_KB}" &
  daemon=$!
  for _ in $(seq 100); do grep -q " $mnt fuse.eventfs " /proc/mounts && break; sleep 0.05; done
  echo "$buffer_kb" > "$tracing/instances/$inst/buffer_size_kb"
  line=$("$build/bench/loss_marks" "$mnt" "$tracing/instances/$inst/trace_marker" "$cpu" "$count" "$read_kb" \
    "$pause_ms" 1000 "$projections" "${RATE:-0}") || line="failed: $line"
  cp "$mnt/per_cpu/cpu$cpu/stats" "$work/stats"
  cp "$tracing/instances/$inst/per_cpu/cpu$cpu/stats" "$work/kstats"
  echo "round $round: $line dropped_by_eventfs=$(stat_of "$work/stats" 'dropped by eventfs')" \
    "lost_events=$(stat_of "$work/stats" 'lost events') kernel_overrun=$(stat_of "$work/kstats" overrun)"
  cleanup
done
