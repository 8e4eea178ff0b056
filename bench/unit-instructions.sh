#!/usr/bin/env bash
# Instructions per null unit under callgrind, closed loop and paced at a rate no engine
# reaches (--rate 1e9: every unit is behind schedule and issued at once): the
# difference between runs of LONG and SHORT units divided by LONG - SHORT, so start-up
# and shut-down cancel. A shared machine cannot blur instruction counts, so this is the
# precise side of bench/openloop.sh's wall-clock pairs (see BENCHMARKS.md, "Pacing
# overhead"). Each figure varies by a few instructions with Lua's per-process string
# hash seed and with the number of chunks (valgrind stretches wall time unevenly).
#
# usage: bench/unit-instructions.sh [RUNS] [LONG] [SHORT]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}; long=${2:-1200000}; short=${3:-200000}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

# Instructions of one run: units, extra kvmark flags...
ir() {
  local units=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
    "$kvmark" --ops "$units" --probe none "$@" workloads/null.lua >/dev/null 2>"$out/log"
  awk '/Collected :/ {print $NF}' "$out/log"
}
per_unit() { # extra kvmark flags...
  local a b
  b=$(ir "$long" "$@"); a=$(ir "$short" "$@")
  awk -v a="$a" -v b="$b" -v n=$((long - short)) 'BEGIN {printf "%.1f", (b - a) / n}'
}
for i in $(seq "$runs"); do
  c=$(per_unit); p=$(per_unit --rate 1e9)
  awk -v c="$c" -v p="$p" -v i="$i" 'BEGIN {printf "run %d: closed %.1f, paced %.1f instructions per unit; closed/paced %.3f\n", i, c, p, c / p}'
done
