#!/usr/bin/env bash
# Harness overhead on RocksDB as CPU time per operation, which a busy machine disturbs
# far less than throughput: the same two sides as bench/rocksdb-overhead.sh, each run
# once with the full budget and once with a single unit (the seed and start-up alone);
# the difference over the budget is the CPU time (user + system, every thread,
# RocksDB's background work included) one operation costs. Reports the median
# bare/kvmark ratio of that cost over the rounds: 1.0 means kvmark adds nothing.
#
# usage: bench/rocksdb-overhead-cpu.sh DATA_DIR [ROUNDS] [OPS] [ITEMS] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: bench/rocksdb-overhead-cpu.sh DATA_DIR [ROUNDS] [OPS] [ITEMS] [THREADS]}
rounds=${2:-5}; ops=${3:-200000}; items=${4:-200000}; threads=${5:-1}
target=${CARGO_TARGET_DIR:-target}
kvmark=${KVMARK:-$target/release/kvmark}
# `|| true`: before `cargo bench --bench rocksdb_overhead --no-run` there is no bare
# loop (or only its .d file), and the check below must say so instead of set -e.
bare=${BARE:-$(ls -t "$target"/release/deps/rocksdb_overhead-* 2>/dev/null | grep -v '\.d$' | head -1 || true)}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
[ -x "${bare:-}" ] || { echo "build first: cargo bench --bench rocksdb_overhead --no-run (or set BARE)" >&2; exit 2; }

# CPU seconds (user + system) of one command, its output discarded.
cpu() {
  local TIMEFORMAT='%U %S'
  { time "$@" > /dev/null; } 2>&1 | awk '{print $1 + $2}'
}
median() { sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f (min %.3f, max %.3f, %d rounds)", m, v[1], v[NR], NR}'; }

for mode in fill read; do
  wl=bench/workloads/${mode}random.lua
  n=$ops; [ "$mode" = read ] && n=$((ops * 4))
  ratios=()
  for r in $(seq "$rounds"); do
    per_op() { # side, budget -> CPU microseconds per operation
      local full base
      sync; sleep 1
      if [ "$1" = bare ]; then
        full=$(cpu "$bare" "$mode" --dir "$data" --items "$items" --ops "$n" --threads "$threads")
        base=$(cpu "$bare" "$mode" --dir "$data" --items "$items" --ops "$threads" --threads "$threads")
      else
        full=$(cpu "$kvmark" --backend rocksdb --data-dir "$data" --items "$items" --ops "$n" --threads "$threads" "$wl")
        base=$(cpu "$kvmark" --backend rocksdb --data-dir "$data" --items "$items" --ops "$threads" --threads "$threads" "$wl")
      fi
      awk -v f="$full" -v b="$base" -v n="$n" 'BEGIN{printf "%.3f", (f - b) * 1e6 / n}'
    }
    b=$(per_op bare); k=$(per_op kvmark)
    # A side whose run took no more CPU than its one-operation run (the clock counts in
    # ticks, and a busy machine moves start-up costs) has no figure: the round is left
    # out rather than divided by zero.
    if awk -v a="$b" -v k="$k" 'BEGIN{exit !(a > 0 && k > 0)}'; then
      ratio=$(awk -v a="$b" -v k="$k" 'BEGIN{printf "%.3f", a/k}')
      ratios+=("$ratio")
    else
      ratio="n/a (below the CPU clock's resolution at $n operations)"
    fi
    echo "${mode}random t$threads round $r: bare $b us CPU/op, kvmark $k us CPU/op, bare/kvmark $ratio (load $(cut -d' ' -f1 /proc/loadavg))"
  done
  if [ ${#ratios[@]} -gt 0 ]; then
    echo "${mode}random t$threads: median bare/kvmark CPU per op $(printf '%s\n' "${ratios[@]}" | median)"
  else
    echo "${mode}random t$threads: median bare/kvmark CPU per op n/a (no round measured above the CPU clock's resolution: give more OPS)"
  fi
done
