#!/usr/bin/env bash
# Runs a command under Debian's kernels, each booted in qemu (TCG), with the
# host's root shared read-only over 9p, and prints one line per kernel.
#
#   sudo bash scripts/kernels.sh [-k 5.10,6.1,6.12] [-o DIR] [-t SECONDS] [-s SECONDS] [-e VAR]... [-v] [--] COMMAND [ARG]...
#   bash scripts/kernels.sh -l      (lists the kernels' names)
#
# -k  the kernels, comma-separated (default: all of KERNELS below)
# -o  keep each kernel's results share in DIR/KERNEL (default: a temporary
#     directory, removed at the end)
# -t  the time limit of each VM, in seconds (default 1200)
# -s  end a VM whose console and output stay the same this many seconds
#     (default 300); a VM ended so (or at -t) first gets an NMI, on which
#     its kernel prints where it was in console.log
# -e  pass the host's VAR into the command's environment (repeatable)
# -v  print the command's output after each VM (by default only the last
#     40 lines of a failed one)
#
# COMMAND runs as root, chrooted into the host's root (read-only), in the
# current directory, with a disk of its own on /tmp (ext2, 4 GiB, sparse in
# a temporary file), tmpfs on /run and /mnt, tracefs at
# /sys/kernel/tracing, /dev/fuse, and a writable share at $EVENTFS_RESULTS
# (/mnt/results) that is DIR/KERNEL on the host; $EVENTFS_KERNEL is the
# kernel's name (5.10, ...). Its output is in $EVENTFS_RESULTS/output.log,
# the kernel's console in console.log.
#
# Each kernel's package (linux-image-amd64's dependency in the suite) is
# fetched from Debian's registry with apt-get download against a private
# sources list and lists directory, and kept in EVENTFS_KERNEL_CACHE
# (default /var/cache/eventfs-kernels) with what dpkg -x unpacks of it that
# the VMs use: vmlinuz and the modules of scripts/kernels/modules (made
# again from the package when that list changes). Nothing is installed on
# the host; a later run fetches nothing.
# The VM has no network. Exit status: 0 when COMMAND exited 0 in every VM.
set -euo pipefail

# name:suite
KERNELS=(5.10:bullseye 6.1:bookworm 6.12:bookworm-backports)
MIRROR=http://deb.debian.org/debian

here=$(cd "$(dirname "$0")" && pwd)
cache=${EVENTFS_KERNEL_CACHE:-/var/cache/eventfs-kernels}

usage() {
  sed -n '5,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

want=
out=
limit=1200
stall=300
verbose=
passenv=()
while getopts "k:o:t:s:e:vlh" opt; do
  case $opt in
    l) printf '%s\n' "${KERNELS[@]%%:*}"; exit 0 ;;
    k) want=$OPTARG ;;
    o) out=$OPTARG ;;
    t) limit=$OPTARG ;;
    s) stall=$OPTARG ;;
    e) passenv+=("$OPTARG") ;;
    v) verbose=1 ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || usage
[[ $limit =~ ^[1-9][0-9]*$ ]] || { echo "kernels.sh: -t wants a number of seconds, not '$limit'" >&2; exit 2; }
[[ $stall =~ ^[1-9][0-9]*$ ]] || { echo "kernels.sh: -s wants a number of seconds, not '$stall'" >&2; exit 2; }
for v in "${passenv[@]}"; do
  [[ $v =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { echo "kernels.sh: -e wants a variable name, not '$v'" >&2; exit 2; }
done
if [ "$(id -u)" -ne 0 ]; then
  echo "kernels.sh: run this as root (it mounts the host's root in the VMs)" >&2
  exit 2
fi
for tool in qemu-system-x86_64 busybox apt-get dpkg; do
  command -v $tool >/dev/null || { echo "kernels.sh: $tool is missing (bash scripts/deps.sh installs it)" >&2; exit 2; }
done

selected=()
for k in "${KERNELS[@]}"; do
  if [ -z "$want" ] || [[ ,$want, == *,${k%%:*},* ]]; then selected+=("$k"); fi
done
if [ -n "$want" ]; then
  IFS=, read -ra asked <<<"$want"
  for a in "${asked[@]}"; do
    found=
    for k in "${KERNELS[@]}"; do [ "${k%%:*}" = "$a" ] && found=1; done
    [ -n "$found" ] || { echo "kernels.sh: no kernel '$a' (there are: ${KERNELS[*]%%:*})" >&2; exit 2; }
  done
fi

# Everything this run makes outside the cache and DIR is under $work; the
# VM running at the time is $qpid. Both go whatever ends the script.
work=$(mktemp -d /tmp/eventfs-kernels.XXXXXX)
qpid=
cleanup() {
  if [ -n "$qpid" ]; then
    kill "$qpid" 2>/dev/null || true
    wait "$qpid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# fetch NAME SUITE: fills $cache/NAME with vmlinuz, release and modules/
# (the .ko files the VM loads, decompressed, and their order), once.
fetch() {
  local name=$1 suite=$2 dir=$cache/$1
  # (Made again when the list of modules changes, from the cached package.)
  [ -f "$dir/ready" ] && cmp -s "$dir/modules.wanted" "$here/kernels/modules" && return 0
  local apt=$cache/apt/$suite
  rm -f "$dir/ready"
  mkdir -p "$apt/lists/partial" "$apt/parts"
  echo "deb $MIRROR $suite main" >"$apt/sources.list"
  local opts=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o "Dir::Etc::sourceparts=$apt/parts"
              -o "Dir::State::Lists=$apt/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
              -o "Dir::Etc::preferencesparts=$apt/parts" -o "Dir::Etc::preferences=$apt/none"
              -o APT::Sandbox::User=root)
  echo "kernels.sh: fetching the $name kernel ($suite)" >&2
  apt-get -qq "${opts[@]}" update >&2 || return 1
  local pkg
  pkg=$(apt-cache "${opts[@]}" depends linux-image-amd64 |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}')
  [ -n "$pkg" ] || { echo "kernels.sh: no kernel package in $suite" >&2; return 1; }
  local tmp=$work/fetch-$name debs=$cache/debs
  mkdir -p "$tmp/root" "$debs"
  local deb
  deb=$(ls "$debs/${pkg}"_*.deb 2>/dev/null | tail -n 1)
  if [ -z "$deb" ]; then
    (cd "$tmp" && apt-get -qq "${opts[@]}" download "$pkg" >&2) || return 1
    deb=$(ls "$tmp/${pkg}"_*.deb)
    mv "$deb" "$debs/" || return 1
    deb=$debs/$(basename "$deb")
  fi
  dpkg -x "$deb" "$tmp/root" || return 1
  local release
  release=$(ls "$tmp/root/lib/modules")
  rm -rf "$dir"
  mkdir -p "$dir/modules"
  cp "$tmp/root/boot/vmlinuz-$release" "$dir/vmlinuz" || return 1
  echo "$release" >"$dir/release"
  # Only the modules the VM loads, and those they depend on (their
  # .modinfo's depends=), are kept, decompressed, with the order to load
  # them in (each after its dependencies).
  local m=$tmp/root/lib/modules/$release
  find "$m" -name '*.ko*' >"$tmp/all"
  : >"$dir/modules/order"
  local want
  for want in $(grep -v '^#' "$here/kernels/modules"); do
    add_module "$m" "$tmp/all" "$dir/modules" "$want" || return 1
  done
  rm -rf "$tmp"
  cp "$here/kernels/modules" "$dir/modules.wanted"
  touch "$dir/ready"
}

# add_module MODULES_DIR LIST OUT NAME: unless it is built into the kernel
# (modules.builtin), decompresses module NAME (found in LIST, the paths of
# the kernel's modules) into OUT, after those it depends on, and appends
# NAME.ko to OUT/order.
add_module() {
  local m=$1 all=$2 out=$3 name=${4//-/_}
  grep -qx "$name.ko" "$out/order" && return 0
  local f
  f=$(awk -v n="$name" '{ b = $0; sub(/.*\//, "", b); sub(/\.ko.*/, "", b); gsub(/-/, "_", b); if (b == n) { print; exit } }' "$all")
  if [ -z "$f" ]; then
    if grep -Eq "/${name//_/[-_]}\.ko$" "$m/modules.builtin"; then return 0; fi
    echo "kernels.sh: the kernel has no module $name" >&2
    return 1
  fi
  case $f in
    *.ko.xz) xz -dc "$f" >"$out/$name.ko" ;;
    *.ko.zst) zstd -qdc "$f" >"$out/$name.ko" ;;
    *) cp "$f" "$out/$name.ko" ;;
  esac
  local deps d
  deps=$(tr '\0' '\n' <"$out/$name.ko" | sed -n 's/^depends=//p' | head -n 1)
  for d in ${deps//,/ }; do
    add_module "$m" "$all" "$out" "$d" || return 1
  done
  echo "$name.ko" >>"$out/order"
}

# initramfs NAME OUT: busybox, the init and the kernel's modules, with the
# order to load them in.
initramfs() {
  local dir=$cache/$1 out=$2 root=$work/initramfs-$1
  rm -rf "$root"
  mkdir -p "$root"/{bin,dev,proc,sys,newroot,modules}
  cp "$(command -v busybox)" "$root/bin/busybox"
  local a
  for a in sh mount umount mkdir insmod chroot echo sync uname cat mke2fs sed; do ln -s busybox "$root/bin/$a"; done
  cp "$here/kernels/init" "$root/init"
  chmod 755 "$root/init"
  cp "$dir"/modules/* "$root/modules/"
  (cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$out"
}

# monitor SOCKET COMMAND: one command to a VM's qemu monitor.
monitor() {
  python3 - "$1" "$2" <<'PY' >/dev/null 2>&1 || true
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall((sys.argv[2] + "\n").encode())
time.sleep(1)
PY
}

# job.sh: what init runs in the chroot.
write_job() {
  local res=$1 name=$2
  shift 2
  {
    echo '#!/bin/sh'
    echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    echo "export HOME=/tmp LANG=C.UTF-8 EVENTFS_KERNEL=$name EVENTFS_RESULTS=/mnt/results"
    local v
    for v in "${passenv[@]}"; do
      [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
    done
    printf 'cd %q || exit 125\n' "$PWD"
    printf '%s\n' "$PWD" >"$res/workdir"
    printf '%q ' "$@"
    echo '>/mnt/results/output.log 2>&1 </dev/null'
  } >"$res/job.sh"
}

status=0
for k in "${selected[@]}"; do
  name=${k%%:*}
  suite=${k#*:}
  start=$SECONDS
  if ! fetch "$name" "$suite"; then
    echo "kernel $name: FAILED (cannot fetch the kernel from $suite)"
    status=1
    continue
  fi
  release=$(cat "$cache/$name/release")
  if [ -n "$out" ]; then
    res=$out/$name
  else
    res=$work/results-$name
  fi
  rm -rf "$res"
  mkdir -p "$res"
  res=$(cd "$res" && pwd)
  initramfs "$name" "$work/initrd-$name"
  write_job "$res" "$name" "$@"
  # The VM's /tmp: a disk of its own (sparse; ext2, made by init), so that
  # files there live in the page cache and on a block device as on a host.
  rm -f "$work/tmp.img"
  truncate -s 4G "$work/tmp.img"
  # One host thread runs both vCPUs (thread=single): with a thread each,
  # a CPU ran code the other had just patched (6.12 enabling a tracepoint:
  # "Oops: int3" in ttwu_do_activate; 5.10 hung with both CPUs spinning
  # with interrupts off).
  qemu-system-x86_64 \
    -accel tcg,thread=single -cpu max -smp 2 -m 2048 \
    -nodefaults -display none -no-reboot -nic none \
    -serial "file:$res/console.log" -monitor "unix:$work/monitor-$name,server,nowait" \
    -kernel "$cache/$name/vmlinuz" -initrd "$work/initrd-$name" \
    -drive "file=$work/tmp.img,if=virtio,format=raw,cache=unsafe" \
    -append "console=ttyS0 panic=-1 quiet mitigations=off no_timer_check unknown_nmi_panic" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$res,mount_tag=results,security_model=none,multidevs=remap" \
    </dev/null >"$work/qemu-$name.log" 2>&1 &
  qpid=$!
  # Ended at the time limit, or when neither the console nor the command's
  # output has changed for $stall seconds (a VM that hangs): first an NMI,
  # on which the kernel panics (unknown_nmi_panic) and prints where it was
  # to the console, then qemu is stopped.
  ended=
  last=
  quiet_since=$SECONDS
  while kill -0 $qpid 2>/dev/null; do
    sleep 5
    now=$(cat "$res/console.log" "$res/output.log" 2>/dev/null | wc -c || true)
    if [ "$now" != "$last" ]; then
      last=$now
      quiet_since=$SECONDS
    fi
    if [ $((SECONDS - start)) -ge "$limit" ]; then
      ended="timed out after $limit s"
    elif [ $((SECONDS - quiet_since)) -ge "$stall" ]; then
      ended="no output for $stall s"
    else
      continue
    fi
    monitor "$work/monitor-$name" nmi
    sleep 10
    kill $qpid 2>/dev/null
    break
  done
  qrc=0
  wait $qpid || qrc=$?
  qpid=
  took=$((SECONDS - start))
  if [ -s "$res/status" ]; then
    rc=$(cat "$res/status")
    if [ "$rc" = 0 ]; then
      echo "kernel $name ($release): passed, $took s"
    else
      echo "kernel $name ($release): FAILED (exit status $rc), $took s"
      status=1
    fi
  elif [ -n "$ended" ]; then
    echo "kernel $name ($release): FAILED ($ended), $took s"
    sed -n '/Kernel panic\|NMI\|Call Trace/,$p' "$res/console.log" | head -n 60 | sed 's/^/  /'
    status=1
  else
    echo "kernel $name ($release): FAILED (the VM ended without a result, qemu status $qrc), $took s"
    tail -n 20 "$work/qemu-$name.log" "$res/console.log" 2>/dev/null | sed 's/^/  /'
    status=1
  fi
  if [ -n "$verbose" ]; then
    sed 's/^/  /' "$res/output.log" 2>/dev/null || true
  elif [ "${rc:-1}" != 0 ] && [ -f "$res/output.log" ]; then
    # Each failed test's own output (its assertions' messages), at most 120
    # lines of each, then the summary.
    awk '/^\[ RUN      \]/ { n = 0 } { if (n < 120) buf[n++] = $0 }
         /^\[  FAILED  \].*\([0-9]+ ms\)$/ { for (i = 0; i < n; i++) print buf[i]; n = 0 }' \
      "$res/output.log" | head -n 300 | sed 's/^/  /'
    tail -n 12 "$res/output.log" | sed 's/^/  /'
  fi
  rc=
done
exit $status
