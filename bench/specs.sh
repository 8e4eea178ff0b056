#!/usr/bin/env bash
# Declarative specs (BENCHMARKS.md, "Specs"): gen throughput, peak memory at 5M live
# keys, and the cost per operation of a spec against its Lua twin on skiplist. Every
# figure is the median of RUNS runs; the spec and Lua runs alternate so drift on a
# shared machine hits both alike.
#
# usage: bench/specs.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
median() { sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.0f (min %.0f, max %.0f, %d runs)\n", m, v[1], v[NR], NR}'; }

wall=$(mktemp) cpu=$(mktemp) spec=$(mktemp) lua=$(mktemp)
trap 'rm -f "$wall" "$cpu" "$spec" "$lua"' EXIT
for _ in $(seq "$runs"); do
  # gen reports ops/s of wall time; time(1) adds the CPU seconds (user + system).
  /usr/bin/time -f "cpu %U %S" "$kvmark" gen bench/ycsb-a-1m.json -o /dev/null 2>&1 | awk -v w="$wall" -v c="$cpu" '
    /ops\/s\)$/ { n = $3; gsub(/[(]/, "", $(NF-1)); print $(NF-1) >> w }
    /^cpu / { print n / ($2 + $3) >> c }'
done
echo "gen, YCSB-A with 1M inserts of 1 KiB values then 1M operations, to /dev/null, one thread:"
echo -n "  ops/s of wall time: "; median <"$wall"
echo -n "  ops/s of CPU time:  "; median <"$cpu"

for f in live-5m live-5m-deletes live-5m-ranges; do
  echo "peak RSS of gen bench/$f.json (KiB):"
  for _ in $(seq 3); do
    /usr/bin/time -f "%M" "$kvmark" gen "bench/$f.json" -o /dev/null 2>&1 | tail -n 1
  done | median
done

for _ in $(seq "$runs"); do
  "$kvmark" bench/ycsb-a-spec.json | awk '/^throughput:/ {print $2}' >>"$spec"
  "$kvmark" --ops 1100000 bench/ycsb-a-lua.lua | awk '/^throughput:/ {print $2}' >>"$lua"
done
echo "skiplist, bench/ycsb-a-spec.json (wu/s):"
median <"$spec"
echo "skiplist, bench/ycsb-a-lua.lua --ops 1100000 (wu/s):"
median <"$lua"
