#!/usr/bin/env bash
# The picture of a stable recording: eventfs mounted, 2 s of sched_* (two
# tasks handing work back and forth, and the machine's own) recorded with
# eventfs-record -F trace.dat, opened in KernelShark under Xvfb and
# photographed. The picture is checked before it is kept: the CPU lanes
# must be drawn (many pixels of task colours in the graph part).
#   sudo bash scripts/kernelshark-picture.sh [OUT.png]   (default docs/kernelshark.png)
# KernelShark runs as the user nobody: as root it opens a dialog first.
# Needs a build (scripts/build.sh build); installs kernelshark, xvfb,
# x11-apps (xwd) and netpbm if missing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/docs/kernelshark.png}

if [ "$(id -u)" -ne 0 ]; then
  echo "kernelshark-picture: run this as root (it mounts eventfs)" >&2
  exit 1
fi
missing=()
for p in kernelshark xvfb xauth x11-apps netpbm; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

work=$(mktemp -d)
mnt=$work/events
chmod 755 "$work"
cleanup() {
  fusermount3 -u "$mnt" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$mnt"
"$top/build/src/eventfs" "$mnt"
# Two tasks hand a byte back and forth while the recording runs.
"$top/build/src/recorder/eventfs-record" -m "$mnt" -e 'sched_*' -F trace.dat -o "$work/trace.dat" -- \
  sh -c 'i=0; while [ $i -lt 300 ]; do echo x | cat > /dev/null; i=$((i + 1)); done; sleep 1'
chmod 644 "$work/trace.dat"

mkdir -p "$work/home"
chown nobody "$work/home"
# KernelShark draws, then the screen is taken; the window fills the screen.
runuser -u nobody -- env HOME="$work/home" xvfb-run -a -s "-screen 0 1280x800x24" sh -c "
  kernelshark '$work/trace.dat' >/dev/null 2>&1 &
  ks=\$!
  sleep 12
  xwd -root -silent > '$work/home/screen.xwd'
  kill \$ks" || true
[ -s "$work/home/screen.xwd" ] || { echo "kernelshark-picture: no screen was taken" >&2; exit 1; }
xwdtopnm "$work/home/screen.xwd" 2>/dev/null | pamdepth 255 > "$work/screen.ppm"

# The window (the picture cropped to what is not the screen's black), and
# its graph's lanes: in the band of the window where KernelShark draws the
# CPUs, pixels of strong colour (task colours, not the grey and white of
# the window).
python3 - "$work/screen.ppm" "$work/window.ppm" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
parts = data.split(b"\n", 3)
if parts[0] != b"P6" or parts[2] != b"255":
    sys.exit("kernelshark-picture: the screen is not a P6 picture of 8-bit samples")
w, h = map(int, parts[1].split())
pix = parts[3]
def at(x, y):
    i = 3 * (w * y + x)
    return pix[i], pix[i + 1], pix[i + 2]
cols = [x for x in range(w) if any(at(x, y) != (0, 0, 0) for y in range(0, h, 4))]
rows = [y for y in range(h) if any(at(x, y) != (0, 0, 0) for x in range(0, w, 4))]
if not cols or not rows:
    sys.exit("kernelshark-picture: the screen is black")
x0, x1, y0, y1 = cols[0], cols[-1] + 1, rows[0], rows[-1] + 1
cw, ch = x1 - x0, y1 - y0
coloured = 0
for y in range(y0 + ch // 4, y0 + 3 * ch // 5):
    for x in range(x0, x1, 2):
        r, g, b = at(x, y)
        if max(r, g, b) - min(r, g, b) > 60:
            coloured += 1
print(f"kernelshark-picture: a window of {cw}x{ch}, {coloured} strongly coloured pixels "
      "(every second column) where the CPU lanes are")
if coloured < 2000:
    sys.exit("kernelshark-picture: the CPU lanes are not drawn")
out = bytearray(f"P6\n{cw} {ch}\n255\n".encode())
for y in range(y0, y1):
    out += pix[3 * (w * y + x0): 3 * (w * y + x1)]
open(sys.argv[2], "wb").write(out)
PY
pnmtopng "$work/window.ppm" > "$out"
echo "kernelshark-picture: $out"
