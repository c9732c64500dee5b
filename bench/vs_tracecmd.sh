#!/usr/bin/env bash
# eventfs-record, with the eventfs daemon it reads, against trace-cmd record:
# what recording the same events with the same ring size costs each, taking
# turns on the same machine (issue 25, item 1).
#   bash bench/vs_tracecmd.sh [BUILD_DIR]     (root)
#
# Workloads, each run ROUNDS times for SECS seconds:
#  storm          bench/marker_storm on every CPU, as fast as it can, writing
#                 to the trace_marker of the instance the recorder records:
#                 trace-cmd 3.1.6 records ftrace:print only as the markers of
#                 its own instance (record -B NAME -p nop: markers only);
#                 eventfs-record -e marker, a stable marker (char[TEXT_LEN]
#                 text) over ftrace:print in the eventfs mount's instance;
#  pingpong       bench/pingpong: two threads pinned to each CPU pass a byte
#                 back and forth through pipes; sched_switch and sched_wakeup
#                 recorded by both;
#  pingpong+load  the same, with a busy loop pinned to each CPU beside them
#                 at the same (normal) priority.
# In each round a workload runs with no recorder, under trace-cmd record and
# under eventfs-record, in an order that turns with the round. A recorder is
# started, waited for until it reads every CPU (trace-cmd: its per-CPU reader
# processes run and its instance is on; eventfs: every per_cpu/cpuN/stats
# says reader: something other than closed), left LEAD s more, then the
# workload runs, and 0.5 s after it ends the recorder gets SIGINT and ends as
# it does on Ctrl-C.
#
# The rings: RING_KB per CPU for both. trace-cmd record -B NAME -b RING_KB (-b
# after -B: before it, it sizes the top-level instance's ring). The eventfs
# daemon has no option for its instance's ring size: the bench writes RING_KB
# to TRACEFS/instances/NAME/buffer_size_kb itself after mounting. eventfs sets
# its instance's sub-buffers to 64 KiB; trace-cmd's keeps the kernel's default
# (the header line shows both).
# trace-cmd record runs with --no-filter -d (ftrace_enabled and set_ftrace_pid
# refuse writes on this machine) and --compression none: 3.1.6 compresses
# trace.dat with zstd by default; the bytes here are the uncompressed ones. It
# exits 1 here at its reset (set_ftrace_filter refuses writes) and leaves its
# instance behind: the bench accepts that status when the trace is whole, and
# removes the instance after every run.
#
# Per tool and round it prints:
#  events   recorded, counted from the output: trace-cmd: bench/tracedat_count
#           over the per-CPU data sections of its instance in trace.dat (the
#           offsets and sizes trace-cmd record prints), counting records by
#           their ring-buffer headers (what trace-cmd report prints, without
#           formatting them); eventfs: babeltrace2's sink.utils.counter over
#           the CTF trace;
#  lost     and where. trace-cmd: kernel ring, its own "CPU N: M events
#           lost" (the instance's overrun), and the lost-event marks in
#           trace.dat. eventfs: kernel ring, the overrun of the mount's
#           per_cpu/cpuN/stats over the run; eventfs queue, their "dropped by
#           eventfs"; recorder, the lost events its summary line counts (what
#           the recording misses: the total);
#  cpu      the CPU time (user + system) of every process of the tool from
#           its start to its exit (bench/tool_usage: trace-cmd's per-CPU
#           reader processes and its final write of trace.dat included), and
#           for eventfs the daemon's over the recorder's run (/proc/PID/stat
#           utime + stime before and after), over the events recorded;
#  work     the workload's markers/s or round trips/s, and their ratio to
#           the same round's run with no recorder. In the storm, that run
#           writes into a ring nobody reads, which overwrites itself once
#           full: on Linux 6.18 here it wrote 0.3 to 0.9 times the markers
#           per second it wrote under either recorder, so the storm's ratios
#           are above 1; compare the two tools' with each other there;
#  B/ev     bytes of event data on disk per event: trace-cmd: its per-CPU data
#           sections (the ring's sub-buffers as read); eventfs: the stream_N
#           files; in parentheses the whole trace (trace.dat with its kallsyms,
#           event formats and command lines; the CTF directory with metadata);
#  RSS      the sum over the tool's processes of each one's peak RSS (VmHWM,
#           sampled every 20 ms by bench/tool_usage; pages a process shares
#           count in each), and for eventfs the daemon's VmHWM (reset at the
#           recorder's start with clear_refs).
# Then, per workload, the medians over the rounds, the ratios eventfs /
# trace-cmd, and the targets of issue 25 item 2 with MET or NOT MET. The
# fifth target (the daemon's CPU per event in bench/stream_bench.sh's full
# storm against the bare reader) is stream_bench.sh's to measure.
#
# Environment: SECS (workload length, default 5), ROUNDS (default 3, at least
# 1), RING_KB (ring per CPU, default 4096), LEAD (s, default 1), TEXT_LEN (the
# stable marker's char[] size, default 24), WORKLOADS (a subset of "storm
# pingpong pingpong+load"), OPTS (more eventfs -o options, e.g. reader=read),
# OUT (where the recordings go, default a temporary directory; each is removed
# once counted).
# A measurement: it exits 0 whatever the figures. Every mount, instance, file
# and process it makes is removed or ended on exit, Ctrl-C included.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_dirs "${1:-}"
secs=${SECS:-5}
rounds=${ROUNDS:-3}
ring_kb=${RING_KB:-4096}
lead=${LEAD:-1}
workloads=${WORKLOADS:-storm pingpong pingpong+load}
tracing=/sys/kernel/tracing
cpus=$(nproc)
inst=eventfs-vs-$$
tc_inst=eventfs-vs-tc-$$

die() { echo "vs_tracecmd.sh: $*" >&2; exit 1; }
is_number() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]] && [ "$(echo "$1 > 0" | bc -l)" = 1 ]; }
is_number "$secs" || die "SECS must be a positive number of seconds, not '$secs'"
is_number "$lead" || die "LEAD must be a positive number of seconds, not '$lead'"
[[ $rounds =~ ^[0-9]+$ ]] && [ "$rounds" -ge 1 ] && [ "$rounds" -le 100 ] || die "ROUNDS must be 1 to 100, not '$rounds'"
[[ $ring_kb =~ ^[0-9]+$ ]] && [ "$ring_kb" -ge 4 ] && [ "$ring_kb" -le 1048576 ] || die "RING_KB must be 4 to 1048576, not '$ring_kb'"
for w in $workloads; do
  case $w in storm|pingpong|pingpong+load) ;; *) die "unknown workload '$w' in WORKLOADS (storm, pingpong, pingpong+load)" ;; esac
done
[ "$(id -u)" = 0 ] || die "needs root (tracefs instances, trace-cmd, the eventfs mount)"
for t in bench/marker_storm bench/pingpong bench/tool_usage bench/tracedat_count src/recorder/eventfs-record src/eventfs; do
  [ -x "$build/$t" ] || die "missing $build/$t: build first"
done
for c in trace-cmd babeltrace2 bc; do
  command -v "$c" > /dev/null || die "missing $c"
done

tool=""     # the tool_usage process of the recorder running, if any
kill_tree() { local c; for c in $(pgrep -P "$1"); do kill_tree "$c"; done; kill -KILL "$1" 2>/dev/null; }
loads=()    # the workload processes running
more_cleanup() {
  local p
  [ -n "$tool" ] && kill -INT "$tool" 2>/dev/null
  for p in "${loads[@]}"; do kill -TERM "$p" 2>/dev/null; done
  if [ -n "$tool" ]; then
    for _ in $(seq 300); do kill -0 "$tool" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$tool" 2>/dev/null && kill_tree "$tool"
  fi
  # Only these: the daemon is a child too, and ends at the unmount.
  for p in $tool "${loads[@]}"; do wait "$p" 2>/dev/null; done
  remove_tc_instance
  [ -n "${out:-}" ] && rm -rf "$out"/vs-tracecmd.$$.*
}
# trace-cmd leaves its instance here (see above); the kernel keeps it while
# a file of it is open, so it is tried for a while.
remove_tc_instance() {
  local d=$tracing/instances/$tc_inst
  for _ in $(seq 100); do
    [ -d "$d" ] || return 0
    rmdir "$d" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "vs_tracecmd.sh: could not remove $d" >&2
}

. "$top/bench/marker_mount.sh"
marker_mount "$build" "$inst" "${OPTS:-}"
out=${OUT:-$work}
# marker_mount_cleanup (which calls more_cleanup) runs on exit; a signal exits.
trap 'exit 130' INT TERM
grep -q " $mnt fuse.eventfs " /proc/mounts || die "eventfs did not mount $mnt"
echo "$ring_kb" > "$tracing/instances/$inst/buffer_size_kb"

# Runs a workload for $secs s and waits for it; writes what it did (markers
# written, or round trips) to $work/done.
workload() {  # WORKLOAD TRACE_MARKER
  local c
  case $1 in
    storm)
      for c in $(seq 0 $((cpus - 1))); do
        "$build/bench/marker_storm" "$2" "$c" "$secs" > "$work/load.$c" &
        loads+=($!)
      done ;;
    pingpong) "$build/bench/pingpong" "$secs" 0 > "$work/load.0" & loads+=($!) ;;
    pingpong+load) "$build/bench/pingpong" "$secs" 1 > "$work/load.0" & loads+=($!) ;;
  esac
  wait "${loads[@]}"
  loads=()
  cat "$work"/load.* | awk -F= '{ n += $2 } END { print n + 0 }' > "$work/done"
  rm -f "$work"/load.*
}

# until CONDITION_FUNCTION is true, for at most 20 s
wait_until() {  # WHAT FUNCTION
  for _ in $(seq 400); do "$2" && return 0; sleep 0.05; done
  return 1
}
tc_ready() {
  local d=$tracing/instances/$tc_inst tc
  [ -e "$d/trace_marker" ] && [ "$(cat "$d/tracing_on" 2>/dev/null)" = 1 ] || return 1
  tc=$(pgrep -P "$tool" | head -1)
  [ -n "$tc" ] && [ "$(pgrep -P "$tc" | wc -l)" -ge "$cpus" ]
}
ef_ready() { ! grep -q '^reader: closed' "$mnt"/per_cpu/cpu*/stats; }
# The mount's counters, summed over the CPUs: "overrun dropped_by_eventfs"
ef_stats() { cat "$mnt"/per_cpu/cpu*/stats | awk -F': ' '/^overrun:/ { o += $2 } /^dropped by eventfs:/ { d += $2 } END { print o + 0, d + 0 }'; }
# key=value from tool_usage's line
usage_of() { tr ' ' '\n' < "$work/usage" | sed -n "s/^$1=//p"; }
# Ends the recorder: SIGINT after the workload, as Ctrl-C would.
stop_tool() {
  sleep 0.5
  kill -INT "$tool" 2>/dev/null || true
  wait "$tool" || true
  tool=""
}

# Each run writes one line to $work/run:
#  none:      "work"
#  trace-cmd: "work events lost ring_lost file_lost cpu_s 0 rss_kb 0 procs data_bytes file_bytes"
#  eventfs:   "work events lost ring_lost queue_lost cpu_s daemon_cpu_s rss_kb daemon_rss_kb procs data_bytes file_bytes"
run_none() {
  : > "$tracing/instances/$inst/trace"
  workload "$1" "$tracing/instances/$inst/trace_marker"
  cat "$work/done" > "$work/run"
}

run_tracecmd() {
  local dat=$out/vs-tracecmd.$$.dat ev status sections
  case $1 in
    storm) ev=(-p nop) ;;
    *) ev=(-e sched:sched_switch -e sched:sched_wakeup) ;;
  esac
  rm -f "$dat"*
  "$build/bench/tool_usage" -o "$work/usage" -- \
    trace-cmd record --no-filter -d --compression none -o "$dat" -B "$tc_inst" -b "$ring_kb" "${ev[@]}" \
    > "$work/tc.out" 2>&1 &
  tool=$!
  wait_until "trace-cmd" tc_ready || die "trace-cmd record did not start: $(tr '\n' ' ' < "$work/tc.out")"
  echo "$(cat "$tracing/instances/$tc_inst/buffer_size_kb") KiB per CPU in $(cat "$tracing/instances/$tc_inst/buffer_subbuf_size_kb" 2>/dev/null || echo 4) KiB sub-buffers" > "$work/tc.ring"
  sleep "$lead"
  workload "$1" "$tracing/instances/$tc_inst/trace_marker"
  stop_tool
  remove_tc_instance
  status=$(usage_of status)
  [ "$status" = 0 ] || [ "$status" = 1 ] || die "trace-cmd record ended with status $status: $(tr '\n' ' ' < "$work/tc.out")"
  # "CPUn data recorded at offset=0x..." then "    N bytes in size": the
  # top-level buffer's first, then the instance's.
  sections=$(awk '/data recorded at offset=/ { sub(/.*offset=/, ""); off = $1; next }
                  off != "" && /bytes in size/ { print off, $1; off = "" }' "$work/tc.out" | tail -n "$cpus")
  [ "$(echo "$sections" | grep -c .)" = "$cpus" ] && [ -f "$dat" ] || die "trace-cmd record wrote no whole trace: $(tr '\n' ' ' < "$work/tc.out")"
  # shellcheck disable=SC2086
  "$build/bench/tracedat_count" "$dat" $sections > "$work/count"
  awk -v work="$(cat "$work/done")" -v cpu="$(usage_of cpu_s)" -v rss="$(usage_of rss_kb)" -v procs="$(usage_of procs)" \
      -v ring="$(awk '/^CPU [0-9]+: [0-9]+ events lost/ { n += $3 } END { print n + 0 }' "$work/tc.out")" \
      -v fbytes="$(stat -c %s "$dat")" '
    { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
    END { lost = ring > v["missed"] ? ring : v["missed"]
          print work, v["events"], lost, ring, v["missed"], cpu, 0, rss, 0, procs, v["data_bytes"], fbytes }' "$work/count" > "$work/run"
  rm -f "$dat"*
}

run_eventfs() {
  local dir=$out/vs-tracecmd.$$.ctf ev before after events summary
  case $1 in
    storm) ev=(-e marker) ;;
    *) ev=(-e sched_switch -e sched_wakeup) ;;
  esac
  rm -rf "$dir"
  # An empty ring, so that nothing the no-recorder run left in it counts.
  : > "$tracing/instances/$inst/trace"
  before=$(ef_stats)
  "$build/bench/tool_usage" -o "$work/usage" -p "$daemon" -- \
    "$build/src/recorder/eventfs-record" -m "$mnt" "${ev[@]}" -o "$dir" > /dev/null 2> "$work/ef.err" &
  tool=$!
  wait_until "eventfs-record" ef_ready || die "eventfs-record did not start: $(tr '\n' ' ' < "$work/ef.err")"
  sleep "$lead"
  workload "$1" "$tracing/instances/$inst/trace_marker"
  stop_tool
  [ "$(usage_of status)" = 0 ] || die "eventfs-record ended with status $(usage_of status): $(tr '\r\n' '  ' < "$work/ef.err")"
  after=$(ef_stats)
  # "eventfs-record: N events, L lost, ..."
  summary=$(tr '\r' '\n' < "$work/ef.err" | grep -E '^eventfs-record: [0-9]+ events, [0-9]+ lost' | tail -1)
  [ -n "$summary" ] || die "eventfs-record printed no summary: $(tr '\r\n' '  ' < "$work/ef.err")"
  events=$(babeltrace2 "$dir" -c sink.utils.counter --params='step=+0' 2> "$work/bt.err" | awk '/ Event messages?$/ { print $1 }')
  [ -n "$events" ] || die "babeltrace2 could not read the recording: $(head -c 300 "$work/bt.err")"
  echo "$(cat "$work/done") $events $(echo "$summary" | awk '{ print $4 }') $before $after $(usage_of cpu_s) $(usage_of other_cpu_s)" \
       "$(usage_of rss_kb) $(usage_of other_rss_kb) $(usage_of procs) $(cat "$dir"/stream_* | wc -c) $(du -sb "$dir" | cut -f1)" |
    awk '{ print $1, $2, $3, $6 - $4, $7 - $5, $8, $9, $10, $11, $12, $13, $14 }' > "$work/run"
  rm -rf "$dir"
}

results=$work/results
: > "$results"
work_unit() { case $1 in storm) echo markers ;; *) echo "round trips" ;; esac; }

echo "vs trace-cmd: $cpus CPUs, $rounds rounds of $secs s per workload ($workloads), rings of $ring_kb KiB per CPU" \
     "(eventfs's instance: $(cat "$tracing/instances/$inst/buffer_size_kb") KiB per CPU in $(cat "$tracing/instances/$inst/buffer_subbuf_size_kb" 2>/dev/null || echo 4) KiB sub-buffers)," \
     "$(trace-cmd --version 2>/dev/null | grep -o 'version [^ ]*' | head -1 | sed 's/version/trace-cmd/') --no-filter -d --compression none," \
     "eventfs${OPTS:+ -o $OPTS}, stable marker char[$text_len], kernel $(uname -r)"
for w in $workloads; do
  unit=$(work_unit "$w")
  for round in $(seq "$rounds"); do
    order=(none trace-cmd eventfs)
    for i in 0 1 2; do
      k=${order[$(( (i + round - 1) % 3 ))]}
      case $k in
        none) run_none "$w" ;;
        trace-cmd) run_tracecmd "$w" ;;
        eventfs) run_eventfs "$w" ;;
      esac
      echo "$w $round $k $(cat "$work/run")" >> "$results"
    done
    # Each tool's line, against the round's run with no recorder.
    base=$(awk -v w="$w" -v r="$round" '$1 == w && $2 == r && $3 == "none" { print $4 }' "$results")
    for k in trace-cmd eventfs; do
      awk -v w="$w" -v r="$round" -v k="$k" -v base="$base" -v secs="$secs" -v unit="$unit" '
        $1 == w && $2 == r && $3 == k {
          work = $4; ev = $5; lost = $6; cpu = $9 + $10
          where = k == "trace-cmd" ? sprintf("kernel ring %d, marked in trace.dat %d", $7, $8) \
                                   : sprintf("kernel ring %d, eventfs queue %d, recorder %d", $7, $8, lost)
          cpus = k == "trace-cmd" ? sprintf("%.2f s, %d processes", cpu, $13) \
                                  : sprintf("%.2f s: recorder %.2f + daemon %.2f", cpu, $9, $10)
          rss = k == "trace-cmd" ? sprintf("%.1f MB, %d processes", $11 / 1024, $13) \
                                 : sprintf("%.1f MB: recorder %.1f + daemon %.1f", ($11 + $12) / 1024, $11 / 1024, $12 / 1024)
          printf "%-13s round %d  %-9s  events %9d  lost %8d (%s)\n", w, r, k, ev, lost, where
          printf "%-13s          %-9s  cpu %s = %.3f us/event  %s %.0f/s = %.2fx no recorder (%.0f/s)\n", "", "", cpus,
                 cpu * 1e6 / (ev > 0 ? ev : 1), unit, work / secs, work / (base > 0 ? base : 1), base / secs
          printf "%-13s          %-9s  %.1f bytes/event on disk (whole trace %.1f)  peak RSS %s\n", "", "",
                 $14 / (ev > 0 ? ev : 1), $15 / (ev > 0 ? ev : 1), rss
        }' "$results"
    done
  done
done

# The median of a figure (an awk expression over a result line) over a
# tool's rounds of a workload.
median_of() {  # WORKLOAD TOOL EXPR
  awk -v w="$1" -v k="$2" '$1 == w && $3 == k { print '"$3"' }' "$results" | median
}
# The median of a tool's throughput over that of the round's run with no recorder.
median_ratio() {  # WORKLOAD TOOL
  awk -v w="$1" -v k="$2" '$1 == w && $3 == "none" { b[$2] = $4 }
    $1 == w && $3 == k { r[$2] = $4 } END { for (i in r) print r[i] / (b[i] > 0 ? b[i] : 1) }' "$results" | median
}

echo
echo "trace-cmd's instance: $(cat "$work/tc.ring" 2>/dev/null || echo "not seen")"
echo "medians over $rounds rounds (eventfs = eventfs-record + the daemon)"
declare -A CPU BYTES RSS
for w in $workloads; do
  for k in trace-cmd eventfs; do
    CPU[$w,$k]=$(median_of "$w" "$k" '($9 + $10) * 1e6 / ($5 > 0 ? $5 : 1)')
    BYTES[$w,$k]=$(median_of "$w" "$k" '$14 / ($5 > 0 ? $5 : 1)')
    RSS[$w,$k]=$(median_of "$w" "$k" '($11 + $12) / 1024')
    printf '%-13s %-9s  events %9.0f  lost %8.0f  cpu %.3f us/event  %s %.2fx no recorder  %.1f bytes/event  peak RSS %.1f MB\n' \
      "$w" "$k" "$(median_of "$w" "$k" '$5')" "$(median_of "$w" "$k" '$6')" "${CPU[$w,$k]}" "$(work_unit "$w")" \
      "$(median_ratio "$w" "$k")" "${BYTES[$w,$k]}" "${RSS[$w,$k]}"
  done
  printf '%-13s eventfs/trace-cmd: cpu per event %.2fx  bytes per event %.2fx  peak RSS %.2fx  throughput %.2fx\n' "$w" \
    "$(echo "${CPU[$w,eventfs]} / (${CPU[$w,trace-cmd]} + 0.000001)" | bc -l)" \
    "$(echo "${BYTES[$w,eventfs]} / (${BYTES[$w,trace-cmd]} + 0.000001)" | bc -l)" \
    "$(echo "${RSS[$w,eventfs]} / (${RSS[$w,trace-cmd]} + 0.000001)" | bc -l)" \
    "$(echo "$(median_ratio "$w" eventfs) / ($(median_ratio "$w" trace-cmd) + 0.000001)" | bc -l)"
done

# The targets of issue 25, item 2: a ratio (median) per workload, met when
# at most 1 in every workload.
target() {  # NAME ARRAY
  local -n a=$2
  local line="" met=MET w r
  for w in $workloads; do
    r=$(echo "${a[$w,eventfs]} / (${a[$w,trace-cmd]} + 0.000001)" | bc -l)
    line+=$(printf ' %s %.3fx' "$w" "$r")
    [ "$(echo "$r <= 1.0" | bc -l)" = 1 ] || met="NOT MET"
  done
  echo "target $1:$line: $met"
}
echo
target "cpu per recorded event <= 1.0x trace-cmd's (medians)" CPU
# Rounds in which trace-cmd lost nothing and eventfs lost events.
awk '$3 == "trace-cmd" { t[$1 " " $2] = $6 } $3 == "eventfs" { e[$1 " " $2] = $6 }
  END { for (r in t) if (t[r] == 0) { n++; if (e[r] > 0) { bad++; which = which " " r " (" e[r] ")" } }
        printf "target no loss in a round where trace-cmd lost none: eventfs lost events in %d of the %d such rounds%s: %s\n",
               bad, n, which == "" ? "" : ":" which, bad ? "NOT MET" : "MET" }' "$results"
target "bytes per event on disk <= trace-cmd's uncompressed (medians)" BYTES
target "total peak memory <= trace-cmd's total (medians)" RSS
echo "target daemon cpu per event in stream_bench.sh's full storm <= 2x the bare reader's: measured by bench/stream_bench.sh, not here"
