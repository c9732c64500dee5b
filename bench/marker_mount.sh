# Sourced by the stream benches: an eventfs mount of the default catalog plus
# a stable `marker` over ftrace:print (char[TEXT_LEN], default 24) in a work
# directory of its own, taken down (and the work directory removed) on exit.
#   marker_mount BUILD_DIR INSTANCE [EVENTFS_OPTIONS]
# sets work, mnt, daemon and text_len; more_cleanup, if defined, runs first.
marker_mount() {
  local build=$1 inst=$2 opts=${3:-}
  work=$(mktemp -d "/tmp/eventfs-$(basename "$0" .sh)-XXXXXX")
  mnt=$work/mnt
  daemon=
  trap marker_mount_cleanup EXIT INT TERM
  mkdir -p "$mnt"
  text_len=${TEXT_LEN:-24}
  { cat "$top/src/catalog/default.catalog"; printf 'STABLE_EVENT(marker, ftrace:print, id=1000,\n\t__array(char, text, %d) = buf\n)\n' "$text_len"; } > "$work/bench.catalog"
  "$build/src/eventfs" "$mnt" -f -o "instance=$inst,catalog=$work/bench.catalog${opts:+,$opts}" &
  daemon=$!
  for _ in $(seq 100); do grep -q " $mnt fuse.eventfs " /proc/mounts && break; sleep 0.05; done
}

marker_mount_cleanup() {
  set +e
  if declare -F more_cleanup > /dev/null; then more_cleanup; fi
  if grep -q " $mnt fuse.eventfs " /proc/mounts; then fusermount3 -u "$mnt"; fi
  # The daemon removes its instance as it exits: let it finish.
  if [ -n "$daemon" ]; then
    for _ in $(seq 100); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.05; done
    kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null
  fi
  rm -rf "$work"
}
