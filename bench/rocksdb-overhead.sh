#!/usr/bin/env bash
# Harness overhead on a real engine: fill-random and read-random on RocksDB, driven by
# kvmark (bench/workloads/*.lua) and by a bare Rust loop over the same crate with the
# same options, keys and values (benches/rocksdb_overhead.rs). Each round runs the two
# sides back to back on fresh stores and records kvmark / bare; the median ratio over
# the rounds is the figure (this shared machine drifts; a paired ratio damps it).
#
# usage: bench/rocksdb-overhead.sh DATA_DIR [ROUNDS] [OPS] [ITEMS]
#   DATA_DIR must be on the disk to benchmark (not tmpfs). OPS puts fill an empty store;
#   read-random runs 4 x OPS gets (they are faster) on a store seeded with ITEMS keys.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: bench/rocksdb-overhead.sh DATA_DIR [ROUNDS] [OPS] [ITEMS]}
rounds=${2:-5}; ops=${3:-200000}; items=${4:-200000}
target=${CARGO_TARGET_DIR:-target}
kvmark=${KVMARK:-$target/release/kvmark}
bare=${BARE:-$(ls -t "$target"/release/deps/rocksdb_overhead-* 2>/dev/null | grep -v '\.d$' | head -1)}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
[ -x "${bare:-}" ] || { echo "build first: cargo bench --bench rocksdb_overhead --no-run (or set BARE)" >&2; exit 2; }
[ -d "$data" ] || { echo "$data: not a directory" >&2; exit 2; }

median() { sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f (min %.3f, max %.3f, %d rounds)", m, v[1], v[NR], NR}'; }

for mode in fill read; do
  wl=bench/workloads/${mode}random.lua
  n=$ops; [ "$mode" = read ] && n=$((ops * 4))
  for threads in 1 2; do
    ratios=()
    for r in $(seq "$rounds"); do
      # The two sides swap order every round, and each starts after the previous
      # run's writes are on disk: otherwise the second of a pair pays for the first's
      # write-back.
      run_bare() {
        sync; sleep 1
        b=$("$bare" "$mode" --dir "$data" --items "$items" --ops "$n" --threads "$threads" | sed -n 's/.*ops\/s=//p')
      }
      run_kvmark() {
        sync; sleep 1
        k=$("$kvmark" --backend rocksdb --data-dir "$data" --items "$items" --ops "$n" --threads "$threads" "$wl" |
          awk '/^throughput:/{print $2; exit}')
      }
      if (( r % 2 )); then run_bare; run_kvmark; else run_kvmark; run_bare; fi
      ratio=$(awk -v a="$k" -v b="$b" 'BEGIN{printf "%.3f", a/b}')
      ratios+=("$ratio")
      echo "${mode}random t$threads round $r: bare $b ops/s, kvmark $k wu/s, kvmark/bare $ratio (load $(cut -d' ' -f1 /proc/loadavg))"
    done
    echo "${mode}random t$threads: median kvmark/bare $(printf '%s\n' "${ratios[@]}" | median)"
  done
done
