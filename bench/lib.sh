# shellcheck shell=bash
# What the bench scripts share; sourced by them, not run.
#
#   . "$(dirname "$0")/lib.sh"
#   bench_dirs "${1:-}"    # sets top (the source tree) and build (absolute)
#   ... | median           # the median of the numbers on standard input

# top: the source tree this file is in. build: the build directory given
# (relative to the working directory), else the tree's build/.
bench_dirs() {
  top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  build=${1:-$top/build}
  [ "${build#/}" = "$build" ] && build=$PWD/$build
  return 0
}

# The median of the numbers on standard input, one or more a line (the mean
# of the two middle ones for an even count); 0 when there is none.
median() {
  tr -s ' \t' '\n\n' | sort -g |
    awk 'NF { v[++n] = $1 }
      END { printf "%.10g\n", n == 0 ? 0 : (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}
