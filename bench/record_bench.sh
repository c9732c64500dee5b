#!/usr/bin/env bash
# eventfs-record under the trace_marker storm of bench/stream_bench.sh: the
# events per second it writes into its CTF trace, against the bench's own
# eventfs stream reader (stream_count, big blocking reads of every CPU's
# per_cpu/cpuN/trace_pipe_raw, counting records) on the same mount, in the
# same run, each with the machine to itself in an order that turns with the
# round; the loss of each, and the recorder's peak RSS.
#   bash bench/record_bench.sh [BUILD_DIR]     (root)
# Environment: SECS (storm length, default 3), ROUNDS (default 3), MODERATE
# (markers/s per CPU of the moderate storm, default 20000), TEXT_LEN (the
# stable marker's char[] size, default 24), OUT (where the recordings go,
# default a temporary directory; they are removed after each round).
# Targets: rate ratio >= 0.90, no more loss than the reader, RSS < 32 MB.
# A measurement: it exits 0 whatever the figures.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_dirs "${1:-}"
secs=${SECS:-3}
rounds=${ROUNDS:-3}
moderate=${MODERATE:-20000}
tracing=/sys/kernel/tracing
cpus=$(nproc)
inst=eventfs-rb-$$

for t in bench/marker_storm bench/stream_count src/recorder/eventfs-record src/eventfs; do
  [ -x "$build/$t" ] || { echo "missing $build/$t: build first" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time (Debian package time)" >&2; exit 1; }
. "$top/bench/marker_mount.sh"
marker_mount "$build" "$inst"
out=${OUT:-$work}
more_cleanup() { rm -rf "$out/record-bench.$$"; }
marker=$tracing/instances/$inst/trace_marker

storm() {  # RATE: runs one storm per CPU for $secs s; prints the markers written
  local pids=()
  for c in $(seq 0 $((cpus - 1))); do
    "$build/bench/marker_storm" "$marker" "$c" "$secs" $1 > "$work/storm.$c" &
    pids+=($!)
  done
  wait "${pids[@]}"
  cat "$work"/storm.* | awk -F= '{ n += $2 } END { print n }'
  rm -f "$work"/storm.*
}

# The bench's own reader, as stream_bench.sh runs it: -> "events lost written"
run_reader() {
  local pids=() written
  : > "$tracing/instances/$inst/trace"
  for c in $(seq 0 $((cpus - 1))); do
    "$build/bench/stream_count" eventfs-blocking "$mnt/per_cpu/cpu$c/trace_pipe_raw" 1000 $((1024 * 1024)) > "$work/count.$c" &
    pids+=($!)
  done
  sleep 0.2
  written=$(storm "$1")
  wait "${pids[@]}"
  cat "$work"/count.* | awk -v w="$written" '
    { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] += kv[2] } }
    END { printf "%d %d %d\n", v["events"], v["lost"], w }'
  rm -f "$work"/count.*
}

# eventfs-record: -> "events lost written max_rss_kb bytes"
run_recorder() {
  local dir=$out/record-bench.$$ rec written
  rm -rf "$dir"
  : > "$tracing/instances/$inst/trace"
  /usr/bin/time -f 'maxrss=%M' -o "$work/time" "$build/src/recorder/eventfs-record" -m "$mnt" -e marker -o "$dir" \
    -t "$(echo "$secs + 1.2" | bc -l)" 2> "$work/rec.err" &
  rec=$!
  sleep 0.2
  written=$(storm "$1")
  wait "$rec" || { echo "eventfs-record failed: $(cat "$work/rec.err")" >&2; exit 1; }
  # "eventfs-record: N events, L lost, ..."
  awk -v w="$written" -v rss="$(sed -n 's/^maxrss=//p' "$work/time")" -v bytes="$(du -sb "$dir" | cut -f1)" '
    /^eventfs-record: [0-9]+ events, [0-9]+ lost/ { printf "%d %d %d %d %d\n", $2, $4, w, rss, bytes }' "$work/rec.err"
  rm -rf "$dir"
}


echo "record bench: $cpus CPUs, $rounds rounds of $secs s, ring $(cat "$tracing/instances/$inst/buffer_size_kb") KiB per CPU, stable marker char[$text_len], kernel $(uname -r)"
max_rss=0
for mode in full moderate; do
  rate=""
  [ $mode = moderate ] && rate=$moderate
  ratios=() more_loss=0 lost_reader=0 lost_record=0
  for round in $(seq "$rounds"); do
    order=(reader recorder)
    [ $((round % 2)) = 0 ] && order=(recorder reader)
    for k in "${order[@]}"; do
      if [ $k = reader ]; then
        read -r rev rlost rw <<< "$(run_reader "$rate")"
        printf '%-22s written %9d  delivered %9d (%9.0f/s)  lost %8d\n' "reader ($mode)" "$rw" "$rev" "$(echo "$rev / $secs" | bc -l)" "$rlost"
      else
        read -r cev clost cw rss bytes <<< "$(run_recorder "$rate")"
        printf '%-22s written %9d  recorded  %9d (%9.0f/s)  lost %8d  max RSS %6d KiB  trace %6.1f MiB\n' "eventfs-record ($mode)" "$cw" "$cev" "$(echo "$cev / $secs" | bc -l)" "$clost" "$rss" "$(echo "$bytes / 1048576" | bc -l)"
        [ "$rss" -gt "$max_rss" ] && max_rss=$rss
      fi
    done
    ratios+=("$(echo "scale=3; $cev / ($rev + 0.0001)" | bc -l)")
    lost_reader=$((lost_reader + rlost)) lost_record=$((lost_record + clost))
    [ "$clost" -gt "$rlost" ] && more_loss=$((more_loss + 1))
  done
  printf 'record_rate_ratio_%s=%s  (eventfs-record / the bench eventfs reader, median of %d rounds: %s; target >= 0.90)\n' \
    "$mode" "$(printf '%s\n' "${ratios[@]}" | median)" "$rounds" "${ratios[*]}"
  echo "record_more_loss_$mode=$more_loss of $rounds rounds (rounds in which eventfs-record lost more than the reader; target 0; lost in all: recorder $lost_record, reader $lost_reader)"
done
echo "record_max_rss_kb=$max_rss  (peak RSS of eventfs-record over all rounds; target < 32768)"
