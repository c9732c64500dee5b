#!/usr/bin/env bash
# Configures (once) and builds eventfs in BUILD_DIR (default: build).
# Extra arguments go to `meson setup`, e.g. -Db_sanitize=address,undefined.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
cd "$top"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "$@" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
fi
ninja -C "$dir" >"$log" 2>&1 || { grep -E -A5 'error|FAILED' "$log" | head -60 >&2; exit 1; }
