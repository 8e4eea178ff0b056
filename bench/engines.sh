#!/usr/bin/env bash
# The engines table: workloads/mixed.lua and workloads/scan.lua on every engine at 1
# and 2 threads, as markdown rows (wu/s, p50/p99 per operation, store size on disk).
#
# Settings are matched where the engines allow it (listed in BENCHMARKS.md): 64 MiB of
# cache each, 64 MiB memtables for the LSMs, no compression (the values are random
# and would not compress), bloom filters on the LSMs, no fsync per commit. Each engine
# seeds one store per workload (--seed-once) and runs both thread counts against it.
#
# usage: bench/engines.sh DATA_DIR [SECS] [ITEMS] [ENGINES] [WORKLOADS]
#   DATA_DIR must be on the disk to benchmark (not tmpfs).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: bench/engines.sh DATA_DIR [SECS] [ITEMS] [ENGINES] [WORKLOADS]}
secs=${2:-20}; items=${3:-200000}
engines=${4:-rocksdb,tidesdb,lmdb,sqlite,leveldb,redb,fjall,bdb,tokyocabinet,kyotocabinet,tkrzw,mdbx,wiredtiger}
workloads=${5:-mixed,scan}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
[ -d "$data" ] || { echo "$data: not a directory" >&2; exit 2; }

settings=(
  'rocksdb.block_based_table_factory={block_cache=64M;filter_policy=bloomfilter:10:false}'
  rocksdb.write_buffer_size=64M
  rocksdb.compression=kNoCompression
  tidesdb.block_cache_size=64M
  tidesdb.write_buffer_size=64M
  tidesdb.compression=none
  tidesdb.sync_mode=none
  leveldb.block_cache_size=64M
  leveldb.write_buffer_size=64M
  leveldb.compression=none
  leveldb.bloom_bits_per_key=10
  fjall.cache_size=64M
  fjall.max_memtable_size=64M
  fjall.compression=none
  redb.cache_size=64M
  redb.durability=none
  lmdb.sync=nosync
  mdbx.sync=utterly_nosync
  wiredtiger.cache_size=64M
  bdb.cache_size=64M
  bdb.txn_sync=nosync
  kyotocabinet.pccap=64M
  sqlite.synchronous=normal
  sqlite.cache_size=-65536
)

echo "| workload | engine | threads | wu/s | p50 / p99 per op | store size |"
echo "|---|---|---|---|---|---|"
for wl in ${workloads//,/ }; do
  for e in ${engines//,/ }; do
    opts=()
    for o in "${settings[@]}"; do [[ $o == "$e".* ]] && opts+=(--engine-opt "$o"); done
    out=$("$kvmark" --backend "$e" --data-dir "$data" --keep-data --seed-once --threads 1,2 --secs "$secs" \
      --items "$items" ${opts[@]+"${opts[@]}"} "workloads/$wl.lua")
    size=$(du -sb "$data"/kvmark-"$e"-* | awk '{s += $1} END {printf "%.0f MiB", s / 1048576}')
    rm -rf "$data"/kvmark-"$e"-*
    echo "$out" | awk -v wl="$wl" -v e="$e" -v size="$size" '
      /^engine=/ { match($0, /threads=[0-9]+/); t = substr($0, RSTART + 8, RLENGTH - 8); lat = ""; next }
      t != "" && $2 ~ /^[0-9]+$/ && $1 ~ /^(put|get|del|range|scan|mget|mput|mdel|append|delete_range)$/ {
        lat = lat (lat == "" ? "" : ", ") $1 " " $5 $6 " / " $9 $10; next }
      /^throughput:/ && t != "" { printf "| %s | %s | %s | %s | %s | %s |\n", wl, e, t, $2, lat, size; t = "" }'
  done
done
