#!/usr/bin/env bash
# Declarative specs (docs/benchmarks-history.md, "Specs"): gen throughput, peak memory at 5M live
# keys, and the cost per operation of specs against their Lua twins on skiplist.
#
# Every figure is the median of RUNS runs. Besides wall-clock rates it reports CPU time
# (user + system, from time(1)), which a busy shared machine disturbs much less. Spec
# and Lua runs alternate so drift hits both alike.
#
# usage: bench/specs.sh [RUNS] [NULL_OPS]
#   RUNS runs of each figure (7; memory: at most 3), NULL_OPS units in each null run
#   (20000000).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}; null_ops=${2:-20000000}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The null spec at NULL_OPS: sizes outside a spec's own op_count need a file.
sed "s/\"op_count\": 20000000/\"op_count\": $null_ops/" bench/null-spec.json >"$tmp/null-spec.json"

median() {
  sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2;
    printf "%.0f (min %.0f, max %.0f, %d runs)\n", m, v[1], v[NR], NR}'
}

# gen: wall ops/s as gen reports it, and ops per CPU second.
for _ in $(seq "$runs"); do
  /usr/bin/time -f "cpu %U %S" "$kvmark" gen bench/ycsb-a-1m.json -o /dev/null 2>&1 | awk -v d="$tmp" '
    /ops\/s\)$/ { n = $3; r = $(NF-1); sub(/^\(/, "", r); print r >> (d "/gen_wall") }
    /^cpu / { print n / ($2 + $3) >> (d "/gen_cpu") }'
done
echo "gen, YCSB-A with 1M inserts of 1 KiB values then 1M operations, to /dev/null, one thread:"
echo "  ops/s (wall):       $(median <"$tmp/gen_wall")"
echo "  ops per CPU second: $(median <"$tmp/gen_cpu")"

for f in live-5m live-5m-deletes live-5m-ranges; do
  for _ in $(seq $((runs < 3 ? runs : 3))); do
    /usr/bin/time -f "%M" "$kvmark" gen "bench/$f.json" -o /dev/null 2>&1 | tail -n 1 >>"$tmp/mem_$f"
  done
  echo "peak RSS of gen bench/$f.json, KiB: $(median <"$tmp/mem_$f")"
done

# One run of a workload: appends its wu/s and its CPU nanoseconds per unit.
measure() {
  local name=$1 units=$2
  shift 2
  /usr/bin/time -f "cpu %U %S" "$kvmark" "$@" 2>&1 | awk -v d="$tmp" -v n="$name" -v u="$units" '
    /^throughput:/ { print $2 >> (d "/" n "_wu") }
    /^cpu / { print ($2 + $3) * 1e9 / u >> (d "/" n "_ns") }'
}
for _ in $(seq "$runs"); do
  measure ycsb_spec 1100000 bench/ycsb-a-spec.json
  measure ycsb_lua 1100000 --ops 1100000 bench/ycsb-a-lua.lua
  measure null_spec "$null_ops" "$tmp/null-spec.json"
  measure null_lua "$null_ops" --ops "$null_ops" bench/null-lua.lua
  measure null_const "$null_ops" --ops "$null_ops" workloads/null.lua
done
for pair in "ycsb_spec bench/ycsb-a-spec.json" "ycsb_lua bench/ycsb-a-lua.lua" \
  "null_spec bench/null-spec.json" "null_lua bench/null-lua.lua" "null_const workloads/null.lua"; do
  set -- $pair
  echo "skiplist, $2: wu/s $(median <"$tmp/$1_wu")"
  echo "    CPU ns per unit $(median <"$tmp/$1_ns")"
done
