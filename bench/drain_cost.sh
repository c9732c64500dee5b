#!/usr/bin/env bash
# What a recording's CPU time is made of: the daemon's drainers alone
# against the daemon and eventfs-record together, in the same pinned sched
# ping-pong (bench/pingpong, SECS seconds, default 5), alternated for ROUNDS
# rounds (default 3), 4 MiB rings per CPU.
#   drain    each CPU's stream opened and never read: the drainers read the
#            rings, project every record and place it in the queues, which
#            fill and then drop their oldest (the daemon's memory grows to
#            the queues' full size); no FUSE transfer, no recorder
#   record   eventfs-record -e sched_switch -e sched_wakeup, as vs_tracecmd.sh
# Per round: the events the kernel rings gave up (their "read events"
# counts), the CPU ticks (10 ms) of the daemon and of the recorder (utime +
# stime before and after) and the ns of CPU per event of both together.
# Then the medians and drain_share= (the drainers' part of a recording's
# CPU per event). A measurement: it exits 0 whatever the figures.
#   bash bench/drain_cost.sh [BUILD_DIR]     (root)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_dirs "${1:-}"
secs=${SECS:-5}
rounds=${ROUNDS:-3}
tracing=/sys/kernel/tracing
for t in bench/pingpong src/recorder/eventfs-record src/eventfs; do
  [ -x "$build/$t" ] || { echo "missing $build/$t: build first" >&2; exit 1; }
done

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
read_events() { cat "$1"/per_cpu/cpu*/stats | awk '$1 == "read" && $2 == "events:" {s += $3} END {print s + 0}'; }

# One round of `mode`: prints "events daemon_ticks recorder_ticks".
round() (
  local mode=$1 rec='' fds=()
  more_cleanup() {
    [ -n "$rec" ] && kill -INT "$rec" 2> /dev/null && wait "$rec" 2> /dev/null
    for fd in "${fds[@]}"; do eval "exec $fd<&-"; done
  }
  . "$top/bench/marker_mount.sh"
  marker_mount "$build" "eventfs-dc-$$"
  local inst=$tracing/instances/eventfs-dc-$$
  echo 4096 > "$inst/buffer_size_kb"
  if [ "$mode" = drain ]; then
    echo 1 > "$mnt/sched_switch/enable"
    echo 1 > "$mnt/sched_wakeup/enable"
    local fd
    for dir in "$mnt"/per_cpu/cpu*; do
      exec {fd}< "$dir/trace_pipe_raw"
      fds+=("$fd")
    done
  else
    "$build/src/recorder/eventfs-record" -m "$mnt" -e sched_switch -e sched_wakeup -o "$work/out.ctf" \
      > /dev/null 2> "$work/rec.err" &
    rec=$!
  fi
  sleep 1
  local d0 r0=0 e0 d1 r1=0 e1
  d0=$(ticks "$daemon"); [ -n "$rec" ] && r0=$(ticks "$rec"); e0=$(read_events "$inst")
  "$build/bench/pingpong" "$secs" 0 > /dev/null
  sleep 0.2
  d1=$(ticks "$daemon"); [ -n "$rec" ] && r1=$(ticks "$rec"); e1=$(read_events "$inst")
  echo "$((e1 - e0)) $((d1 - d0)) $((r1 - r0))"
)

declare -A ns
for r in $(seq "$rounds"); do
  for mode in drain record; do
    read -r ev d rt <<< "$(round "$mode")"  # (after the round's mount is gone)
    per=$(echo "($d + $rt) * 10000000 / ($ev + (${ev:-0} == 0))" | bc)
    printf '%-7s round %d  events %9d  daemon %3d ticks  recorder %3d ticks  %4d ns/event\n' "$mode" "$r" "$ev" "$d" "$rt" "$per"
    ns[$mode]+="$per "
  done
done
dm=$(echo "${ns[drain]}" | median)
rm_=$(echo "${ns[record]}" | median)
echo "drain_ns_per_event=$dm  (the daemon alone, streams open and unread, median of $rounds rounds: ${ns[drain]% })"
echo "record_ns_per_event=$rm_  (daemon and eventfs-record, median of $rounds rounds: ${ns[record]% })"
echo "drain_share=$(echo "scale=2; $dm / ($rm_ + ($rm_ == 0))" | bc)  (the drainers' part of a recording's CPU per event)"
