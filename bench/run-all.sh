#!/usr/bin/env bash
# Builds the release binary and runs every recorded benchmark (see BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --benches
bench/harness.sh 7
bench/scaling.sh 9 3 2 workloads/mixed.lua
bench/specs.sh 7
bench/openloop.sh 21 10000000 10000 5
cargo bench --bench pacing -- 200 0.3
cargo bench --bench sampler -- 1000 0.3
bench/sampler.sh 41 2
bench/plots.sh 7
cargo bench --bench extend_alloc
if command -v valgrind >/dev/null; then
  bench/sampler-instructions.sh 500000
  bench/callgrind.sh 3   # null, paced, spec and oplog paths
fi
# The engine benchmarks need a directory on a real disk (not tmpfs): BENCH_DATA_DIR.
data=${BENCH_DATA_DIR:-/var/tmp/kvmark-bench}
mkdir -p "$data"
bench/rocksdb-overhead.sh "$data" 5 200000 200000
bench/rocksdb-overhead-cpu.sh "$data" 5 200000 200000 1
bench/engines.sh "$data" 10 200000
bench/ivs.sh "$data" rocksdb,lmdb specs/ivs-c.json --engine-opt lmdb.sync=nosync
for e in rocksdb lmdb; do
  bench/ivs.sh "$data" "$e" specs/ivs-c.json --engine-opt lmdb.sync=nosync --scale 10 --epochs 1 --ivs-mode clean,average --repeat 5
done
if command -v valgrind >/dev/null; then
  bench/callgrind.sh 1 200000 50000 rocksdb bare   # a RocksDB get: kvmark's Lua against the bare loop
fi
# keybench is not installed by this project; give its binary to compare side by side.
if [ -n "${KEYBENCH:-}" ]; then bench/keybench.sh 9 20000000; fi
bench/merge.sh 5 16 3600
# Every server engine against its own private server (scripts/servers), beside RocksDB.
bench/ycsb-servers.sh
