#!/usr/bin/env bash
# Open loop's own cost and precision (see docs/benchmarks-history.md, "Open loop").
#
# 1. Pacing overhead: workloads/null.lua on skiplist, closed loop against paced at a
#    rate no engine reaches (1e9 units/s, so every unit is issued at once), in
#    back-to-back pairs; prints each pair's ratio and the medians.
# 2. Schedule accuracy: the same workload paced at RATE units/s, far below capacity
#    (the engine is idle between units); prints the p99 of (actual - intended) start of
#    the units that waited, per run, and the median.
#
# usage: bench/openloop.sh [PAIRS] [OPS] [RATE] [SECS]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-7}; ops=${2:-10000000}; rate=${3:-10000}; secs=${4:-5}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
tp() { awk '/^throughput:/{print $2}'; }

closed=(); paced=(); ratios=()
for i in $(seq "$pairs"); do
  c=$("$kvmark" --ops "$ops" workloads/null.lua | tp)
  p=$("$kvmark" --ops "$ops" --rate 1e9 workloads/null.lua | tp)
  r=$(awk -v a="$c" -v b="$p" 'BEGIN{printf "%.3f", b/a}')
  closed+=("$c"); paced+=("$p"); ratios+=("$r")
  echo "pair $i: closed $c units/s, paced $p units/s, paced/closed $r"
done
echo "median: closed $(printf '%s\n' "${closed[@]}" | median), paced $(printf '%s\n' "${paced[@]}" | median), ratio $(printf '%s\n' "${ratios[@]}" | median)"

# "start accuracy p50 1.26 us, p99 37.02 us, max 4.00 ms" -> p99 in microseconds.
p99s=()
for i in $(seq "$pairs"); do
  line=$("$kvmark" --secs "$secs" --rate "$rate" workloads/null.lua | grep '^schedule:')
  p99=$(sed -E 's/.*p99 ([0-9.]+) (ns|us|ms|s),.*/\1 \2/' <<<"$line" |
    awk '{m=($2=="ns")?0.001:($2=="us")?1:($2=="ms")?1000:1000000; printf "%.2f", $1*m}')
  p99s+=("$p99")
  echo "accuracy run $i at $rate units/s: $line"
done
echo "median schedule accuracy p99: $(printf '%s\n' "${p99s[@]}" | median) us"
