#!/usr/bin/env bash
# Configures (once) and builds eventfs in BUILD_DIR (default: build).
# Extra arguments go to `meson setup`, e.g. -Db_sanitize=address,undefined.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
cd "$top"
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "$@" >/dev/null
fi
ninja -C "$dir" >/dev/null
