#!/usr/bin/env bash
# The harness ceiling: workloads/null.lua (one kv.get of a constant missing key on an
# empty skiplist per unit) on one thread, RUNS times; prints each rate, the median,
# and the peak RSS of each run (the harness's own memory).
#
# usage: bench/harness.sh [RUNS] [OPS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}; ops=${2:-20000000}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
rates=(); rss=()
for i in $(seq "$runs"); do
  out=$( { /usr/bin/time -f "maxrss_kb %M" "$kvmark" --ops "$ops" workloads/null.lua; } 2>&1 )
  r=$(awk '/^throughput:/{print $2}' <<<"$out"); m=$(awk '/^maxrss_kb/{print $2}' <<<"$out")
  rates+=("$r"); rss+=("$m")
  echo "run $i: $r units/s, peak RSS $m KB"
done
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
echo "median: $(printf '%s\n' "${rates[@]}" | median) units/s; median peak RSS $(printf '%s\n' "${rss[@]}" | median) KB"
