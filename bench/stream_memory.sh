#!/usr/bin/env bash
# What the daemon's memory does while streams are open: its resident set
# (VmRSS, and its anonymous part, RssAnon) mounted with no stream open, with
# one stream open and idle, at its peak (VmHWM) during a trace_marker storm
# from every CPU read through every CPU's stream (as stream_bench.sh's full
# storm: blocking reads of READ_KB, default 1024), with that one stream
# still open and idle AFTER seconds after the storm (default 5), and once
# every stream is closed (4 s later: the queues' memory goes 3 s after the
# last stream closes).
#   bash bench/stream_memory.sh [BUILD_DIR]     (root)
# Environment: READER (eventfs -o reader=), SECS (storm length, default 3),
# ROUNDS (storms, default 3), AFTER, READ_KB, OPTS (more eventfs -o
# options, e.g. queue_kb=N), TEXT_LEN (see marker_mount.sh).
# Prints a line per phase and round, then memory_*_kb= lines (the storm
# peak and the after-storm figure: medians of the rounds). A measurement:
# it exits 0 whatever the figures.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_dirs "${1:-}"
secs=${SECS:-3}
rounds=${ROUNDS:-3}
after=${AFTER:-5}
tracing=/sys/kernel/tracing
cpus=$(nproc)
inst=eventfs-sm-$$

for t in marker_storm stream_count; do
  [ -x "$build/bench/$t" ] || { echo "missing $build/bench/$t: build first" >&2; exit 1; }
done
more_cleanup() { exec 3<&- 2>/dev/null || true; }
. "$top/bench/marker_mount.sh"
marker_mount "$build" "$inst" "reader=${READER:-auto}${OPTS:+,$OPTS}"
grep -q " $mnt fuse.eventfs " /proc/mounts || { echo "eventfs did not mount" >&2; exit 1; }
echo 1 > "$mnt/marker/enable"

status_kb() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$daemon/status"; }
# The peak resident set from now on (Linux >= 4.0).
reset_peak() { echo 5 > "/proc/$daemon/clear_refs"; }
# Each CPU's queue memory (kB) and entries from its stats ("-": the daemon
# does not say).
queues() {
  for c in $(seq 0 $((cpus - 1))); do
    awk -F': ' -v c="$c" '$1 == "queue memory" { m = int($2 / 1024) } $1 == "entries" { e = $2 }
      END { printf " cpu%d %s kB/%s", c, m == "" ? "-" : m, e }' "$mnt/per_cpu/cpu$c/stats"
  done
}
phase() {  # LABEL: the daemon's VmRSS, RssAnon and VmHWM now, and its queues (memory/entries)
  printf '%-34s VmRSS %7d kB  RssAnon %7d kB  VmHWM %7d kB  queues%s\n' "$1" "$(status_kb VmRSS)" \
    "$(status_kb RssAnon)" "$(status_kb VmHWM)" "$(queues)"
}

echo "stream memory: $cpus CPUs, eventfs reader=${READER:-auto}${OPTS:+,$OPTS}, reads of ${READ_KB:-1024} KiB, $rounds storms of $secs s, kernel $(uname -r)"
sleep 1
phase "mounted, no stream"
no_stream=$(status_kb VmRSS)
# One stream open, nobody reading it: the rings are open and the drainers
# wait.
exec 3< "$mnt/per_cpu/cpu0/trace_pipe_raw"
sleep 2
phase "one stream open, idle"
idle=$(status_kb VmRSS) idle_anon=$(status_kb RssAnon)
peaks=() afters=()
for round in $(seq "$rounds"); do
  reset_peak
  pids=()
  for c in $(seq 0 $((cpus - 1))); do
    "$build/bench/stream_count" eventfs-blocking "$mnt/per_cpu/cpu$c/trace_pipe_raw" 1000 $((${READ_KB:-1024} * 1024)) \
      > "$work/count.$c" &
    pids+=($!)
  done
  sleep 0.2
  storms=()
  for c in $(seq 0 $((cpus - 1))); do
    "$build/bench/marker_storm" "$tracing/instances/$inst/trace_marker" "$c" "$secs" \
      > /dev/null 2>&1 &
    storms+=($!)
  done
  wait "${storms[@]}"
  wait "${pids[@]}"
  phase "storm $round: peak"
  peaks+=("$(status_kb VmHWM)")
  events=$(cat "$work"/count.* | tr ' ' '\n' | awk -F= '$1 == "events" { n += $2 } END { print n + 0 }')
  echo "  ($events events read)"
  rm -f "$work"/count.*
  sleep "$after"
  phase "storm $round: ${after} s after, stream open"
  afters+=("$(status_kb VmRSS)")
done
exec 3<&-
sleep 4
phase "every stream closed 4 s ago"
closed=$(status_kb VmRSS)
echo "memory_no_stream_kb=$no_stream"
echo "memory_stream_idle_kb=$idle  (RssAnon $idle_anon kB; less the mounted figure: $((idle - no_stream)) kB for one open stream)"
echo "memory_storm_peak_kb=$(printf '%s\n' "${peaks[@]}" | median)  (VmHWM during each storm: ${peaks[*]})"
echo "memory_after_storm_kb=$(printf '%s\n' "${afters[@]}" | median)  (VmRSS $after s after each storm, one stream open: ${afters[*]})"
echo "memory_closed_kb=$closed"
