#!/usr/bin/env bash
# Installs what eventfs needs to build, test and run on Debian 12, and makes
# sure tracefs is mounted. Sourced by quickstart.sh and run-tests.sh.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "eventfs: run this as root (it installs packages and mounts a filesystem)" >&2
  exit 1
fi

packages=(build-essential meson ninja-build pkg-config python3 libfuse3-dev fuse3
          libtracefs-dev libtraceevent-dev libfmt-dev libgtest-dev libbenchmark-dev
          trace-cmd libtracecmd-dev libkshark-dev libjson-c-dev libzstd-dev zlib1g-dev mandoc clang libclang-rt-14-dev babeltrace2
          qemu-system-x86 busybox-static)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! grep -q ' - tracefs ' /proc/self/mountinfo; then
  mount -t tracefs nodev /sys/kernel/tracing
fi
[ -e /dev/fuse ] || modprobe fuse 2>/dev/null || true
