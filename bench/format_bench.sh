#!/usr/bin/env bash
# format_bench.sh: eventfs against its tracefs baseline, side by side.
#
#   bash bench/format_bench.sh [BUILD_DIR]      (default BUILD_DIR: build)
#
# Measures, in one run:
#  1. open/read-until-EOF/close rate (bench/read_loop, cat-like raw syscalls)
#     of tracefs's events/sched/sched_switch/format against eventfs's
#     sched_switch/format and raw/sched/sched_switch/format, interleaved rounds,
#     median of each; plus how many FUSE requests reach the daemon per open
#     (a short run of the daemon under -d, requests counted).
#  2. start-up: exec of `eventfs MNT` (daemonizing: returns once mounted) to a
#     mount whose raw/ mirror answers (bench/startup_probe), median of N runs,
#     cross-checked by polling /proc/self/mountinfo.
#  3. the daemon's VmRSS right after mount and after reading every stable
#     format plus `ls -R raw/`.
# Ends with format_read_ratio=, startup_ms=, idle_rss_mb= lines and the targets.
# A measurement, not a test: a missed target does not fail it. It exits non-zero
# only when something is broken (missing binaries, a mount or read that fails).
#
# Knobs (environment): ROUNDS (3), SECS per read run (2), STARTUP_RUNS (10),
# TRACEFS (/sys/kernel/tracing).
set -uo pipefail

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-2}
STARTUP_RUNS=${STARTUP_RUNS:-10}
TRACEFS=${TRACEFS:-/sys/kernel/tracing}

# Targets (see "Performance notes" in DESIGN.md).
TARGET_RATIO=1.00     # format reads >= 1.0x tracefs
TARGET_STARTUP_MS=100 # ready < 100 ms
TARGET_RSS_MB=16      # idle RSS < 16 MB

die() {
  echo "format_bench: $*" >&2
  exit 1
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
BUILD=${1:-build}
if [[ ! -d $BUILD && -d $ROOT/$BUILD ]]; then BUILD=$ROOT/$BUILD; fi
[[ -d $BUILD ]] || die "build dir '$BUILD' not found (usage: bash bench/format_bench.sh [BUILD_DIR])"
BUILD=$(cd "$BUILD" && pwd)
EVENTFS=$BUILD/src/eventfs
READ_LOOP=$BUILD/bench/read_loop
PROBE=$BUILD/bench/startup_probe
for b in "$EVENTFS" "$READ_LOOP" "$PROBE"; do
  [[ -x $b ]] || die "$b not built (run: ninja -C $BUILD)"
done
command -v fusermount3 >/dev/null || die "fusermount3 not found"
TRACEFS_FORMAT=$TRACEFS/events/sched/sched_switch/format
[[ -r $TRACEFS_FORMAT ]] || die "$TRACEFS_FORMAT not readable (tracefs mounted? root?)"

TMP=$(mktemp -d /tmp/eventfs-bench.XXXXXX) || die "mktemp failed"
MNT=$TMP/mnt
DBG_MNT=$TMP/dbg
mkdir -p "$MNT" "$DBG_MNT"
STARTED_PIDS=() # every daemon this script started, to end by pid if need be

is_mounted() { awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo; }

# The pid of the eventfs daemon serving mount point $1 (daemonized: not our child).
daemon_pid() {
  local p args
  for p in /proc/[0-9]*; do
    args=$(tr '\0' '\n' <"$p/cmdline" 2>/dev/null) || continue
    [[ $(head -n1 <<<"$args") == "$EVENTFS" ]] || continue
    grep -qxF -- "$1" <<<"$args" && { echo "${p#/proc/}"; return 0; }
  done
  return 1
}

wait_gone() { # pid, timeout in 10 ms ticks
  local i
  for ((i = 0; i < ${2:-500}; i++)); do
    [[ -d /proc/$1 ]] || return 0
    # a zombie child of ours counts as gone
    [[ $(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null) == Z ]] && return 0
    sleep 0.01
  done
  return 1
}

unmount() { # mount point, daemon pid (may be empty)
  if is_mounted "$1"; then
    fusermount3 -u "$1" 2>/dev/null || fusermount3 -uz "$1" 2>/dev/null
  fi
  if [[ -n ${2:-} ]] && ! wait_gone "$2" 500; then
    kill "$2" 2>/dev/null
    wait_gone "$2" 200 || kill -9 "$2" 2>/dev/null
  fi
}

# shellcheck disable=SC2317  # reached through the trap
cleanup() {
  local rc=$? p
  trap - EXIT INT TERM HUP
  for m in "$MNT" "$DBG_MNT"; do
    is_mounted "$m" && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null; }
  done
  for p in "${STARTED_PIDS[@]}"; do
    [[ -d /proc/$p ]] && ! wait_gone "$p" 100 && kill "$p" 2>/dev/null
  done
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; } # kv KEY "k=v k=v"
fmt() { awk -v v="$2" "BEGIN { printf \"$1\", v }"; }

mount_daemon() { # mount point; sets PID
  "$EVENTFS" "$1" || die "eventfs $1 failed"
  PID=$(daemon_pid "$1") || die "mounted $1 but cannot find the daemon's pid"
  STARTED_PIDS+=("$PID")
}

echo "eventfs format benchmark: $(uname -r), $(nproc) CPUs, $(date -u +%FT%TZ)"
echo "eventfs: $EVENTFS"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# ---------------------------------------------------------------- 1. reads
mount_daemon "$MNT"
STABLE=$MNT/sched_switch/format
RAW=$MNT/raw/sched/sched_switch/format
[[ -r $STABLE ]] || die "$STABLE missing (is sched_switch available? see $MNT/unavailable_events)"
[[ -r $RAW ]] || die "$RAW missing"

declare -a T_OPS E_OPS R_OPS
run_read() { # path; sets OPS and BYTES
  local out
  out=$("$READ_LOOP" -t "$SECS" "$1") || die "read_loop $1 failed"
  OPS=$(kv ops_per_s "$out")
  BYTES=$(kv bytes_per_op "$out")
}
echo "== 1. open/read/close of a format file ($ROUNDS interleaved rounds of ${SECS}s each)"
for ((r = 1; r <= ROUNDS; r++)); do
  run_read "$TRACEFS_FORMAT"; T_OPS+=("$OPS"); T_BYTES=$BYTES
  run_read "$STABLE"; E_OPS+=("$OPS"); E_BYTES=$BYTES
  run_read "$RAW"; R_OPS+=("$OPS"); R_BYTES=$BYTES
  echo "   round $r: tracefs ${T_OPS[-1]}/s  eventfs ${E_OPS[-1]}/s  eventfs raw ${R_OPS[-1]}/s"
done
T_MED=$(printf "%s\n" "${T_OPS[@]}" | median)
E_MED=$(printf "%s\n" "${E_OPS[@]}" | median)
R_MED=$(printf "%s\n" "${R_OPS[@]}" | median)
RATIO=$(fmt %.2f "$(awk -v a="$E_MED" -v b="$T_MED" 'BEGIN { print a / b }')")
RAW_RATIO=$(fmt %.2f "$(awk -v a="$R_MED" -v b="$T_MED" 'BEGIN { print a / b }')")
printf '   %-48s %8s %12s %8s\n' "file" "bytes" "median op/s" "ratio"
printf '   %-48s %8s %12.0f %8s\n' "tracefs events/sched/sched_switch/format" "$T_BYTES" "$T_MED" "1.00"
printf '   %-48s %8s %12.0f %8s\n' "eventfs sched_switch/format" "$E_BYTES" "$E_MED" "$RATIO"
printf '   %-48s %8s %12.0f %8s\n' "eventfs raw/sched/sched_switch/format" "$R_BYTES" "$R_MED" "$RAW_RATIO"
unmount "$MNT" "$PID"

# FUSE requests per open: a second daemon, in the foreground under -d, whose
# request log is counted over a known number of opens of already-cached files.
echo
echo "== 1b. FUSE requests reaching the daemon per open/read/close (eventfs -d, 1000 opens)"
"$EVENTFS" -d -f "$DBG_MNT" 2>"$TMP/debug.log" &
DBG_PID=$!
STARTED_PIDS+=("$DBG_PID")
for ((i = 0; i < 500; i++)); do is_mounted "$DBG_MNT" && break; sleep 0.01; done
is_mounted "$DBG_MNT" || die "eventfs -d -f $DBG_MNT did not mount (see above)"
count_requests() { # path relative to the mount
  local path=$DBG_MNT/$1 before
  "$READ_LOOP" -n 1 -w 0 "$path" >/dev/null || die "read_loop $path failed" # warm: lookups, first read
  sleep 0.2
  before=$(wc -l <"$TMP/debug.log")
  "$READ_LOOP" -n 1000 -w 0 "$path" >/dev/null || die "read_loop $path failed"
  sleep 0.3 # RELEASE is sent asynchronously after close
  tail -n +"$((before + 1))" "$TMP/debug.log" |
    awk '/opcode: / { sub(/.*opcode: /, ""); n[$1]++; total++ }
         END { line = ""; for (op in n) line = line sprintf(" %s=%.2f", op, n[op] / 1000);
               printf "%.2f%s\n", total / 1000, (line == "" ? " (none)" : line) }'
}
REQ_STABLE=$(count_requests sched_switch/format) || exit 1
REQ_RAW=$(count_requests raw/sched/sched_switch/format) || exit 1
printf '   %-48s %s\n' "sched_switch/format: requests per open" "${REQ_STABLE%% *}  (${REQ_STABLE#* } )"
printf '   %-48s %s\n' "raw/sched/sched_switch/format: requests per open" "${REQ_RAW%% *}  (${REQ_RAW#* } )"
unmount "$DBG_MNT" "$DBG_PID"
wait "$DBG_PID" 2>/dev/null

# ---------------------------------------------------------------- 2. start-up
echo
echo "== 2. start-up: exec of 'eventfs MNT' to stat MNT/raw/sched/sched_switch/format OK ($STARTUP_RUNS runs)"
declare -a S_EXIT S_MI S_READY
for ((r = 1; r <= STARTUP_RUNS; r++)); do
  out=$("$PROBE" -T 10000 "$MNT" "$MNT/raw/sched/sched_switch/format" -- "$EVENTFS" "$MNT")
  rc=$?
  PID=$(daemon_pid "$MNT") && STARTED_PIDS+=("$PID")
  [[ $rc -eq 0 ]] || die "start-up run $r failed: $out"
  S_EXIT+=("$(kv exit_ms "$out")")
  S_MI+=("$(kv mountinfo_ms "$out")")
  S_READY+=("$(kv ready_ms "$out")")
  unmount "$MNT" "${PID:-}"
  is_mounted "$MNT" && die "could not unmount $MNT"
done
echo "   ready ms per run: ${S_READY[*]}"
EXIT_MED=$(printf "%s\n" "${S_EXIT[@]}" | median)
READY_MED=$(printf "%s\n" "${S_READY[@]}" | median)
MI_SEEN=()
for v in "${S_MI[@]}"; do [[ $v == -1* ]] || MI_SEEN+=("$v"); done
if ((${#MI_SEEN[@]})); then MI_MED=$(fmt %.1f "$(printf "%s\n" "${MI_SEEN[@]}" | median)"); else MI_MED="n/a"; fi
STARTUP_MS=$(fmt %.0f "$READY_MED")
printf '   %-48s %8.1f ms\n' "command returned (median)" "$EXIT_MED"
printf '   %-48s %8s ms  (seen in %d of %d runs)\n' "mount seen in /proc/self/mountinfo (median)" \
  "$MI_MED" "${#MI_SEEN[@]}" "$STARTUP_RUNS"
printf '   %-48s %8.1f ms\n' "ready: raw/ answers (median)" "$READY_MED"

# ---------------------------------------------------------------- 3. RSS
echo
echo "== 3. daemon memory (VmRSS)"
rss_kb() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }
mount_daemon "$MNT"
RSS0=$(rss_kb "$PID" VmRSS)
N_STABLE=0
while read -r ev; do
  [[ -n $ev ]] || continue
  cat "$MNT/$ev/format" >/dev/null || die "cat $MNT/$ev/format failed"
  N_STABLE=$((N_STABLE + 1))
done <"$MNT/available_events"
# shellcheck disable=SC2010  # `ls -R raw/` is the workload being measured
N_RAW=$(ls -R "$MNT/raw" | grep -cx format) || die "ls -R $MNT/raw failed"
sleep 0.2
RSS1=$(rss_kb "$PID" VmRSS)
# Beyond the target's definition, for information: every raw format read too.
find "$MNT/raw" -name format -exec cat {} + >/dev/null 2>"$TMP/raw.err" || true
N_RAW_ERR=$(grep -c . "$TMP/raw.err")
sleep 0.2
RSS2=$(rss_kb "$PID" VmRSS)
HWM=$(rss_kb "$PID" VmHWM)
THREADS=$(awk '/^Threads:/ { print $2 }' "/proc/$PID/status")
unmount "$MNT" "$PID"
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
IDLE_RSS_MB=$(mb "$RSS1")
printf '   %-48s %8s MB\n' "right after mount" "$(mb "$RSS0")"
printf '   %-48s %8s MB\n' "after $N_STABLE stable formats + ls -R raw/ ($N_RAW)" "$IDLE_RSS_MB"
printf '   %-48s %8s MB  (%s read errors)\n' "after also reading every raw/ format" "$(mb "$RSS2")" "$N_RAW_ERR"
printf '   %-48s %8s MB, %s threads\n' "peak (VmHWM)" "$(mb "$HWM")" "$THREADS"

# ---------------------------------------------------------------- summary
met() { awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
  ok = (op == ">=") ? (a + 0 >= b + 0) : (a + 0 < b + 0); print ok ? "met" : "NOT MET" }'; }
echo
echo "== summary"
printf '   %-14s %-18s %-18s %s\n' "format reads" "${RATIO}x tracefs" "target >= ${TARGET_RATIO}x" "$(met "$RATIO" ">=" "$TARGET_RATIO")"
printf '   %-14s %-18s %-18s %s\n' "raw/ reads" "${RAW_RATIO}x tracefs" "(no target)" ""
printf '   %-14s %-18s %-18s %s\n' "start-up" "${STARTUP_MS} ms" "target < ${TARGET_STARTUP_MS} ms" "$(met "$STARTUP_MS" "<" "$TARGET_STARTUP_MS")"
printf '   %-14s %-18s %-18s %s\n' "idle RSS" "${IDLE_RSS_MB} MB" "target < ${TARGET_RSS_MB} MB" "$(met "$IDLE_RSS_MB" "<" "$TARGET_RSS_MB")"
echo "format_read_ratio=$RATIO"
echo "raw_format_read_ratio=$RAW_RATIO"
echo "startup_ms=$STARTUP_MS"
echo "idle_rss_mb=$IDLE_RSS_MB"
echo "target_format_read_ratio=>=$TARGET_RATIO $(met "$RATIO" ">=" "$TARGET_RATIO")"
echo "target_startup_ms=<$TARGET_STARTUP_MS $(met "$STARTUP_MS" "<" "$TARGET_STARTUP_MS")"
echo "target_idle_rss_mb=<$TARGET_RSS_MB $(met "$IDLE_RSS_MB" "<" "$TARGET_RSS_MB")"
exit 0
