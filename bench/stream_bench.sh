#!/usr/bin/env bash
# End-to-end record path: a trace_marker storm from every CPU, read through
# eventfs's per-CPU streams, against the same storm read straight from the
# same instance's per_cpu/cpuN/trace_pipe_raw (eventfs reads the kernel ring
# only while one of its streams is open, so each direct reader has it to
# itself in its turn), in the same run, with the same ring size.
#   bash bench/stream_bench.sh [BUILD_DIR]     (root)
# Prints events/s delivered, CPU seconds (readers, and the eventfs daemon),
# lost events of each and eventfs's reader sub-buffers and GET_READER calls,
# at full speed and at a moderate rate, ROUNDS (default 3) times each; then
# the median ratios, the CPU time per event (the daemon's, the direct
# readers'), the rounds in which eventfs lost events and the direct reader
# did not, and the daemon's peak resident memory over the bench
# (bench/stream_memory.sh says more about it). A measurement: it exits 0
# whatever the figures.
# The direct readers, each a baseline:
#  * direct: read(2) of one sub-buffer at a time, its records walked with
#    libtraceevent's kbuffer, as a tool reading trace_pipe_raw with
#    libtraceevent does (Debian 12's libtraceevent is built without
#    optimization: about 30 ns a record);
#  * direct-bare: the same reads, the records only counted by their headers
#    (src/ring/rb_event.h, as eventfs walks them): the least a direct reader
#    can do;
#  * direct mmap: the same rings through the kernel's mapping (mmap_count:
#    TRACE_MMAP_IOCTL_GET_READER, as eventfs's default reader does, on the
#    ring's CPU, where eventfs's reader runs), counted as direct-bare: its
#    ratio to direct-bare is what the mapping interface itself costs on the
#    running kernel (MMAP_BASELINE=0: skipped).
# Environment: READER (eventfs -o reader=), SECS, ROUNDS, MODES (default
# "full moderate"), MODERATE (markers/s per CPU), BUFFER_KB, SUBBUF_KB, BUFFER_PERCENT (instance settings, all
# readers), READ_KB (eventfs read size, default 1024), BLOCKING (0: eventfs's
# streams are read with O_NONBLOCK and poll(2) instead of blocking reads),
# OPTS (more eventfs -o options),
# TEXT_LEN (the size of the stable marker's char[] text, default 24).
# The markers are "storm-<cpu>-<n>", at most 17 bytes with the newline the
# kernel adds: in a char[24], a stable record is 40 bytes, as many as the raw
# record the direct reader gets (a 4-byte event header, 16 bytes of fields,
# the text and its NUL, rounded to 4). A char[64] doubles the bytes eventfs
# moves per event.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_dirs "${1:-}"
secs=${SECS:-3}
rounds=${ROUNDS:-3}
moderate=${MODERATE:-20000}  # markers per second per CPU
tracing=/sys/kernel/tracing
cpus=$(nproc)
inst=eventfs-sb-$$
direct=$tracing/instances/$inst

for t in marker_storm stream_count mmap_count; do
  [ -x "$build/bench/$t" ] || { echo "missing $build/bench/$t: build first" >&2; exit 1; }
done
. "$top/bench/marker_mount.sh"
marker_mount "$build" "$inst" "reader=${READER:-auto}${OPTS:+,$OPTS}"
echo 1 > "$mnt/marker/enable"
echo 5 > "/proc/$daemon/clear_refs"  # (its peak resident memory from here on)
[ -n "${BUFFER_KB:-}" ] && echo "$BUFFER_KB" > "$direct/buffer_size_kb"
# The instance's sub-buffer size (Linux >= 6.8); the direct reader reads one per read(2).
[ -n "${SUBBUF_KB:-}" ] && echo "$SUBBUF_KB" > "$direct/buffer_subbuf_size_kb"
[ -n "${BUFFER_PERCENT:-}" ] && echo "$BUFFER_PERCENT" > "$direct/buffer_percent"
subbuf_bytes=$(( $(cat "$direct/buffer_subbuf_size_kb" 2>/dev/null || echo 4) * 1024 ))

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Bytes per read(2): a sub-buffer for the direct reader (the most one read
# of trace_pipe_raw gives); READ_KB (default 1024) through eventfs.
read_bytes() { if [ "$1" != eventfs ]; then echo "$subbuf_bytes"; else echo $(( ${READ_KB:-1024} * 1024 )); fi; }

# How eventfs's streams are read: by default as eventfs(5) tells a tool that
# must keep up with a storm to, with big blocking reads, which wait in the
# daemon (each read is a FUSE round trip: at 64 KiB, the round trips cost
# eventfs and its reader about 30-45 ns an event, at 1 MiB about 10-15,
# FUSE workers, eventfs-tell and the reader together); or with
# O_NONBLOCK reads and poll(2) (BLOCKING=0).
count_kind() { if [ "$1" = eventfs ] && [ "${BLOCKING:-1}" != 0 ]; then echo eventfs-blocking; else echo "$1"; fi; }

# eventfs's ring reader counters, summed over the CPUs (per_cpu/cpuN/stats):
# "sub-buffers reader_swaps" (swaps: TRACE_MMAP_IOCTL_GET_READER calls).
reader_counters() {
  local c
  for c in $(seq 0 $((cpus - 1))); do cat "$mnt/per_cpu/cpu$c/stats"; done |
    awk -F': ' '$1 == "sub-buffers" { b += $2 } $1 == "reader swaps" { s += $2 } END { printf "%d %d\n", b, s }'
}

# run NAME MARKER_FILE STREAM_KIND STREAM_DIR RATE
#   -> "events lost gaps reader_cpu daemon_cpu subbufs swaps" (the last two: eventfs's, 0 for the others)
run() {
  local marker=$2 kind=$3 dir=$4 rate=$5 pids=() outs=() t0 t1 c0="0 0" c1="0 0"
  # Each run starts on an empty ring with its overrun counters at 0: eventfs
  # reports at its next open what the kernel overwrote while it had no
  # stream open, which here would be the direct reader's losses.
  : > "$direct/trace"
  [ "$kind" = eventfs ] && c0=$(reader_counters)
  t0=$(cpu_ticks "$daemon")
  for c in $(seq 0 $((cpus - 1))); do
    if [ "$kind" = direct-mmap ]; then
      "$build/bench/mmap_count" "$dir/per_cpu/cpu$c/trace_pipe_raw" 1000 "$c" > "$work/count.$c" &
    else
      "$build/bench/stream_count" "$(count_kind "$kind")" "$dir/per_cpu/cpu$c/trace_pipe_raw" 1000 "$(read_bytes "$kind")" > "$work/count.$c" &
    fi
    pids+=($!)
  done
  sleep 0.2
  for c in $(seq 0 $((cpus - 1))); do
    "$build/bench/marker_storm" "$marker" "$c" "$secs" $rate > "$work/storm.$c" &
    outs+=($!)
  done
  wait "${outs[@]}"
  wait "${pids[@]}"
  t1=$(cpu_ticks "$daemon")
  [ "$kind" = eventfs ] && c1=$(reader_counters)
  cat "$work"/count.* | awk -v hz="$(getconf CLK_TCK)" -v d=$((t1 - t0)) -v s="$secs" -v c0="$c0" -v c1="$c1" '
    { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] += kv[2] } }
    END { split(c0, a, " "); split(c1, b, " ")
          printf "%d %d %d %.2f %.2f %d %d\n", v["events"], v["lost"], v["gaps"], v["cpu_s"], d / hz, b[1] - a[1], b[2] - a[2] }'
  cat "$work"/storm.* | awk -F= '{ n += $2 } END { print n }' > "$work/written"
  rm -f "$work"/count.* "$work"/storm.*
}

report() {  # LABEL "events lost gaps reader_cpu daemon_cpu subbufs swaps" WRITTEN
  read -r ev lost gaps rcpu dcpu subbufs swaps <<< "$2"
  printf '%-26s written %9d  delivered %9d (%9.0f/s)  lost %8d  gaps %5d  reader cpu %5.2fs  daemon cpu %5.2fs' \
    "$1" "$3" "$ev" "$(echo "$ev / $secs" | bc -l)" "$lost" "$gaps" "$rcpu" "$dcpu"
  # eventfs's ring reader: sub-buffers started, GET_READER calls (mmap), and
  # records per call.
  [ "${1%% *}" = eventfs ] &&
    printf '  sub-buffers %6d  swaps %7d (%s records each)' "$subbufs" "$swaps" \
      "$([ "$swaps" -gt 0 ] && echo $((ev / swaps)) || echo -)"
  echo
}

echo "stream bench: $cpus CPUs, eventfs reader=${READER:-auto}, reads of ${READ_KB:-1024} KiB$([ "${BLOCKING:-1}" != 0 ] && echo ", blocking" || echo " with O_NONBLOCK and poll"), $rounds rounds of $secs s, ring $(cat "$direct/buffer_size_kb") KiB per CPU in $((subbuf_bytes / 1024)) KiB sub-buffers, buffer_percent $(cat "$direct/buffer_percent"), stable marker record $(( (16 + text_len + 7) / 8 * 8 )) bytes (char[$text_len]), kernel $(uname -r)"
# ratio A B: the events A delivered over those B did, in the round just run.
ratio() { echo "scale=3; ${EV[$1]} / (${EV[$2]} + 0.0001)" | bc -l; }
# ns_per_event CPU_SECONDS EVENTS
ns_per_event() { echo "scale=1; $1 * 1000000000 / ($2 + 0.0001)" | bc -l; }
for mode in ${MODES:-full moderate}; do
  rate=""
  [ $mode = moderate ] && rate=$moderate
  ratios=() bare_ratios=() mmap_ratios=() to_mmap=() loss_only_eventfs=0
  daemon_ns=() bare_ns=() mmap_ns=() cpu_ratios=()
  declare -A EV=() GAPS=() CPU_NS=() LOST_SUM=([eventfs]=0 [direct]=0 [direct-bare]=0 [direct-mmap]=0)
  kinds=(eventfs direct direct-bare direct-mmap)
  [ "${MMAP_BASELINE:-1}" = 0 ] && kinds=(eventfs direct direct-bare)
  for round in $(seq "$rounds"); do
    # Each with the machine to itself, in an order that turns with the round
    # (the machine's speed drifts within a round).
    for i in $(seq 0 $((${#kinds[@]} - 1))); do
      k=${kinds[$(( (i + round - 1) % ${#kinds[@]} ))]}
      case $k in
        eventfs) r=$(run eventfs "$tracing/instances/$inst/trace_marker" eventfs "$mnt" "$rate"); label=eventfs ;;
        direct) r=$(run direct "$direct/trace_marker" direct "$direct" "$rate"); label="direct tracefs" ;;
        direct-bare) r=$(run direct "$direct/trace_marker" direct-bare "$direct" "$rate"); label="direct bare" ;;
        direct-mmap) r=$(run direct-mmap "$direct/trace_marker" direct-mmap "$direct" "$rate"); label="direct mmap" ;;
      esac
      report "$label ($mode)" "$r" "$(cat "$work/written")"
      read -r ev lost gaps rcpu dcpu _ <<< "$r"
      EV[$k]=$ev GAPS[$k]=$gaps
      case $k in
        eventfs) CPU_NS[$k]=$(ns_per_event "$dcpu" "$ev") ;;
        *) CPU_NS[$k]=$(ns_per_event "$rcpu" "$ev") ;;
      esac
      LOST_SUM[$k]=$((LOST_SUM[$k] + lost))
    done
    ratios+=("$(ratio eventfs direct)")
    daemon_ns+=("${CPU_NS[eventfs]}")
    bare_ns+=("${CPU_NS[direct-bare]}")
    cpu_ratios+=("$(echo "scale=2; ${CPU_NS[eventfs]} / (${CPU_NS[direct-bare]} + 0.0001)" | bc -l)")
    [ -n "${CPU_NS[direct-mmap]:-}" ] && mmap_ns+=("${CPU_NS[direct-mmap]}")
    bare_ratios+=("$(ratio eventfs direct-bare)")
    if [ -n "${EV[direct-mmap]:-}" ]; then
      mmap_ratios+=("$(ratio direct-mmap direct-bare)")
      to_mmap+=("$(ratio eventfs direct-mmap)")
    fi
    if { [ "${GAPS[direct]}" -eq 0 ] || [ "${GAPS[direct-bare]}" -eq 0 ]; } && [ "${GAPS[eventfs]}" -ne 0 ]; then
      loss_only_eventfs=$((loss_only_eventfs + 1))
    fi
  done
  printf 'stream_rate_ratio_%s=%s  (eventfs / direct reader with libtraceevent, median of %d rounds: %s; target >= 0.90)\n' \
    "$mode" "$(printf '%s\n' "${ratios[@]}" | median)" "$rounds" "${ratios[*]}"
  printf 'stream_rate_ratio_bare_%s=%s  (eventfs / direct reader counting headers, median of %d rounds: %s; target >= 0.90)\n' \
    "$mode" "$(printf '%s\n' "${bare_ratios[@]}" | median)" "$rounds" "${bare_ratios[*]}"
  echo "loss_where_direct_has_none_$mode=$loss_only_eventfs of $rounds rounds (rounds in which eventfs lost events and a direct read(2) reader lost none; target 0; lost in all: eventfs ${LOST_SUM[eventfs]}, direct ${LOST_SUM[direct]}, direct bare ${LOST_SUM[direct-bare]}, direct mmap ${LOST_SUM[direct-mmap]})"
  printf 'daemon_cpu_ns_per_event_%s=%s  (the eventfs daemon'"'"'s CPU time over the events its streams delivered, median of %d rounds: %s)\n' \
    "$mode" "$(printf '%s\n' "${daemon_ns[@]}" | median)" "$rounds" "${daemon_ns[*]}"
  printf 'bare_cpu_ns_per_event_%s=%s  (the direct-bare read(2) readers'"'"' CPU time per event, median of %d rounds: %s)\n' \
    "$mode" "$(printf '%s\n' "${bare_ns[@]}" | median)" "$rounds" "${bare_ns[*]}"
  [ ${#mmap_ns[@]} -gt 0 ] &&
    printf 'mmap_cpu_ns_per_event_%s=%s  (the direct mmap readers'"'"' CPU time per event, median of %d rounds: %s)\n' \
      "$mode" "$(printf '%s\n' "${mmap_ns[@]}" | median)" "$rounds" "${mmap_ns[*]}"
  printf 'daemon_cpu_to_bare_%s=%s  (daemon CPU per event / direct-bare reader'"'"'s, median of %d rounds: %s; target <= 2)\n' \
    "$mode" "$(printf '%s\n' "${cpu_ratios[@]}" | median)" "$rounds" "${cpu_ratios[*]}"
  if [ ${#mmap_ratios[@]} -gt 0 ]; then
    printf 'mmap_interface_ratio_%s=%s  (direct mmap reader / direct-bare read(2) reader, no eventfs, median of %d rounds: %s)\n' \
      "$mode" "$(printf '%s\n' "${mmap_ratios[@]}" | median)" "$rounds" "${mmap_ratios[*]}"
    printf 'stream_rate_ratio_to_mmap_%s=%s  (eventfs / direct mmap reader, median of %d rounds: %s)\n' \
      "$mode" "$(printf '%s\n' "${to_mmap[@]}" | median)" "$rounds" "${to_mmap[*]}"
  fi
done
echo "daemon_peak_rss_kb=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$daemon/status")  (the eventfs daemon's VmHWM over the bench; its streams are open in the eventfs runs only)"
