#!/usr/bin/env bash
# Harness overhead on a real engine: fill-random and read-random on RocksDB, driven by
# kvmark (bench/workloads/*.lua) and by a bare Rust loop over the same crate with the
# same options, keys and values (benches/rocksdb_overhead.rs); then read-random as a
# declarative spec (bench/workloads/readrandom.json: keys rendered in Rust, no Lua),
# against the bare loop running the very operations `kvmark gen` writes for that spec;
# and (mode oplog) that log itself replayed by `kvmark replay` against the same bare loop.
# Both sides wait for RocksDB's flushes and compactions after the seed (kvmark
# --settle), so the timed phase does not share the 2 cores with the seed's compaction.
# Each round runs the two sides back to back on fresh stores and records kvmark / bare;
# the median ratio over the rounds is the figure (this shared machine drifts; a paired
# ratio damps it).
#
# usage: bench/rocksdb-overhead.sh DATA_DIR [ROUNDS] [OPS] [ITEMS] [MODES]
#   DATA_DIR must be on the disk to benchmark (not tmpfs). OPS puts fill an empty store;
#   read-random runs 4 x OPS gets (they are faster) on a store seeded with ITEMS keys.
#   MODES: a space-separated subset of "fill read spec oplog" (default "fill read spec").
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: bench/rocksdb-overhead.sh DATA_DIR [ROUNDS] [OPS] [ITEMS]}
rounds=${2:-5}; ops=${3:-200000}; items=${4:-200000}; modes=${5:-fill read spec}
target=${CARGO_TARGET_DIR:-target}
kvmark=${KVMARK:-$target/release/kvmark}
# `|| true`: before `cargo bench --bench rocksdb_overhead --no-run` there is no bare
# loop (or only its .d file), and the check below must say so instead of set -e.
bare=${BARE:-$(ls -t "$target"/release/deps/rocksdb_overhead-* 2>/dev/null | grep -v '\.d$' | head -1 || true)}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
[ -x "${bare:-}" ] || { echo "build first: cargo bench --bench rocksdb_overhead --no-run (or set BARE)" >&2; exit 2; }
[ -d "$data" ] || { echo "$data: not a directory" >&2; exit 2; }

median() { sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f (min %.3f, max %.3f, %d rounds)", m, v[1], v[NR], NR}'; }

# The spec at this size, and its operations as a log for the bare side (removed at exit).
spec=$(mktemp --suffix .json); log="$data/rocksdb-overhead-$$.ops"
trap 'rm -f "$spec" "$log"' EXIT
sed -e "s/\"op_count\": 200000/\"op_count\": $items/" -e "s/\"op_count\": 800000/\"op_count\": $((ops * 4))/" \
  bench/workloads/readrandom.json > "$spec"
case " $modes " in *" spec "* | *" oplog "*) "$kvmark" gen "$spec" -o "$log" ;; esac

for mode in $modes; do
  case $mode in fill|read|spec|oplog) ;; *) echo "unknown mode $mode: give fill, read, spec or oplog" >&2; exit 2 ;; esac
  wl=bench/workloads/${mode}random.lua; label=${mode}random
  [ "$mode" = spec ] && label=readrandom-spec
  [ "$mode" = oplog ] && label=readrandom-oplog
  n=$ops; [ "$mode" = fill ] || n=$((ops * 4))
  for threads in 1 2; do
    ratios=()
    for r in $(seq "$rounds"); do
      # The two sides swap order every round, and each starts after the previous
      # run's writes are on disk: otherwise the second of a pair pays for the first's
      # write-back.
      run_bare() {
        sync; sleep 1
        if [ "$mode" = spec ] || [ "$mode" = oplog ]; then
          # The spec's load group puts one key at a time.
          b=$("$bare" read --dir "$data" --threads "$threads" --seed-batch 1 --oplog "$log" --settle | sed -n 's/.*ops\/s=//p')
        else
          b=$("$bare" "$mode" --dir "$data" --items "$items" --ops "$n" --threads "$threads" --settle | sed -n 's/.*ops\/s=//p')
        fi
      }
      run_kvmark() {
        sync; sleep 1
        if [ "$mode" = spec ] || [ "$mode" = oplog ]; then
          # The read phase's throughput, from the tsv row of its gets (columns by name).
          # awk reads to the end: quitting early would make kvmark's later rows fail
          # with a broken pipe, and the run with them.
          local input=$spec
          [ "$mode" = oplog ] && input=$log
          k=$("$kvmark" --backend rocksdb --data-dir "$data" --threads "$threads" --settle --report tsv "$input" |
            awk -F'\t' 'NR == 1 {for (i = 1; i <= NF; i++) col[$i] = i; next}
              !done && $col["phase"] == "read" && $col["op"] == "get" {print $col["wu_per_s"]; done = 1}')
        else
          k=$("$kvmark" --backend rocksdb --data-dir "$data" --items "$items" --ops "$n" --threads "$threads" --settle "$wl" |
            awk '!done && /^throughput:/ {print $2; done = 1}')
        fi
      }
      if (( r % 2 )); then run_bare; run_kvmark; else run_kvmark; run_bare; fi
      ratio=$(awk -v a="$k" -v b="$b" 'BEGIN{printf "%.3f", a/b}')
      ratios+=("$ratio")
      echo "$label t$threads round $r: bare $b ops/s, kvmark $k wu/s, kvmark/bare $ratio (load $(cut -d' ' -f1 /proc/loadavg))"
    done
    echo "$label t$threads: median kvmark/bare $(printf '%s\n' "${ratios[@]}" | median)"
  done
done
