#!/usr/bin/env bash
# Instructions per unit under callgrind: the difference between a run of LONG units and
# one of SHORT units divided by LONG - SHORT, so start-up and shut-down cancel. A
# shared machine cannot blur instruction counts, so a change to the hot path can be
# judged here by a number that does not move with the load (wall-clock figures are in
# bench/harness.sh, bench/openloop.sh and bench/rocksdb-overhead.sh). Each figure varies
# by a few instructions with Lua's per-process string hash seed and with the number of
# chunks (valgrind stretches wall time unevenly).
#
# Paths, on skiplist, one thread:
#   null    workloads/null.lua, closed loop: one kv.get of a missing key per unit
#   paced   the same at --rate 1e9 (every unit is behind schedule and issued at once)
#   spec    bench/null-spec.json: a spec's empty point query, keys rendered in Rust
#   oplog   the same operations as an operation log (kvmark gen, then replayed)
#   put     bench/put-spec.json: a spec's insert of a fresh key with a 100-byte value
#   put-classes  the same with --size-classes 256,4096 (each put also filed in its
#           value-size class, through the verbs' out-of-line form)
# and, when named (slower: RocksDB under valgrind), a real engine's cost beside the
# harness's:
#   rocksdb  bench/workloads/readrandom.lua on RocksDB: one get of a random present key
#            per unit, on a store of ITEMS (20000) keys of 4 KiB
#   bare     the same gets from the bare Rust loop (benches/rocksdb_overhead.rs, BARE)
#   rocksdb-fill, bare-fill  bench/workloads/fillrandom.lua and the bare loop's fill: one
#            put of a random key and a 4 KiB value per unit, into an empty store
#   rocksdb-oplog, bare-oplog  the gets of bench/workloads/readrandom.json's run phase
#            (ITEMS keys of 4 KiB, then one get of a random key per unit) as an
#            operation log (`kvmark gen`), replayed by kvmark and read by the bare loop
#            (`--oplog`): the same gets on both sides, seeded from the same log
#   keybench keybench itself on workloads/null.lua (skiplist backend, one thread), the
#            other side of bench/keybench.sh; keybench is not installed by this project:
#            give its binary as KEYBENCH (it runs from its own directory)
#
# usage: bench/callgrind.sh [RUNS] [LONG] [SHORT] [PATHS...]
#   RUNS rounds (default 3) of LONG (1200000) minus SHORT (200000) units, for each of
#   PATHS (default: null paced spec oplog). ANNOTATE=FILE also keeps the LONG null
#   run's profile in FILE, for `callgrind_annotate FILE`. When the bare loop is not
#   built, bare and bare-fill are left out with a line saying what to build, the other
#   paths still run, and the script exits 2.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}; long=${2:-1200000}; short=${3:-200000}
shift $(($# < 3 ? $# : 3))
paths=("$@"); [ ${#paths[@]} -gt 0 ] || paths=(null paced spec oplog)
for path in "${paths[@]}"; do
  case $path in null | paced | spec | oplog | put | put-classes | rocksdb | bare | rocksdb-fill | bare-fill | rocksdb-oplog | bare-oplog) ;;
    keybench) [ -x "${KEYBENCH:-}" ] ||
      { echo "the keybench path runs keybench: give its binary as KEYBENCH${KEYBENCH:+ (KEYBENCH=$KEYBENCH is not an executable)}" >&2; exit 2; } ;;
    *) echo "unknown path $path: give null, paced, spec, oplog, put, put-classes, rocksdb, bare, rocksdb-fill, bare-fill, rocksdb-oplog, bare-oplog or keybench" >&2; exit 2 ;;
  esac
done
target=${CARGO_TARGET_DIR:-target}
kvmark=${KVMARK:-$target/release/kvmark}
items=${ITEMS:-20000}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind (scripts/setup installs it)" >&2; exit 2; }

# The bare loop is benches/rocksdb_overhead.rs, which cargo names with a hash and builds
# only for `cargo bench`: until then there is no such file (or only its .d), which
# must not stop the paths that do not need it (`|| true`: grep fails on no match).
bare=${BARE:-$(ls -t "$target"/release/deps/rocksdb_overhead-* 2>/dev/null | grep -v '\.d$' | head -1 || true)}
skipped=()
if [ ! -x "${bare:-}" ]; then
  kept=()
  for path in "${paths[@]}"; do
    case $path in bare | bare-fill | bare-oplog) skipped+=("$path") ;; *) kept+=("$path") ;; esac
  done
  paths=(${kept[@]+"${kept[@]}"})
fi
# Said before the runs (so a user can stop and build) and again after them.
say_skipped() {
  echo "bench/callgrind.sh: the bare RocksDB loop is not built${BARE:+ (BARE=$BARE is not an executable)}, so these paths are not measured: ${skipped[*]}. Build it with \`cargo bench --bench rocksdb_overhead --no-run\` (or set BARE)." >&2
}
if [ ${#skipped[@]} -gt 0 ]; then
  say_skipped
  [ ${#paths[@]} -gt 0 ] || exit 2
fi
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

# The spec at N operations, and its log: sizes outside a spec's own op_count need files.
spec_of() {
  sed "s/\"op_count\": 20000000/\"op_count\": $1/" bench/null-spec.json > "$out/spec-$1.json"
  sed "s/\"op_count\": 20000000/\"op_count\": $1/" bench/put-spec.json > "$out/put-$1.json"
}
for n in "$long" "$short"; do
  spec_of "$n"
  case " ${paths[*]} " in *" oplog "*)
    "$kvmark" gen "$out/spec-$n.json" -o "$out/log-$n.ops" >/dev/null 2>"$out/log" ||
      { echo "bench/callgrind.sh: kvmark gen failed:" >&2; cat "$out/log" >&2; exit 1; } ;;
  esac
  case " ${paths[*]} " in *" rocksdb-oplog "* | *" bare-oplog "*)
    sed -e "s/\"op_count\": 200000/\"op_count\": $items/" -e "s/\"op_count\": 800000/\"op_count\": $n/" \
      bench/workloads/readrandom.json >"$out/read-$n.json"
    "$kvmark" gen "$out/read-$n.json" -o "$out/read-$n.ops" >/dev/null 2>"$out/log" ||
      { echo "bench/callgrind.sh: kvmark gen failed:" >&2; cat "$out/log" >&2; exit 1; } ;;
  esac
done

# Instructions of one run of `path` with n units.
ir() {
  local path=$1 n=$2 cg=$out/cg
  [ -n "${ANNOTATE:-}" ] && [ "$path" = null ] && [ "$n" = "$long" ] && cg=$ANNOTATE
  local bin=$kvmark cmd=(--probe none) dir=.
  case $path in
    null) cmd+=(--ops "$n" workloads/null.lua) ;;
    paced) cmd+=(--ops "$n" --rate 1e9 workloads/null.lua) ;;
    spec) cmd+=("$out/spec-$n.json") ;;
    put) cmd+=("$out/put-$n.json") ;;
    put-classes) cmd+=(--size-classes 256,4096 "$out/put-$n.json") ;;
    oplog) cmd=(replay --backend skiplist --probe none "$out/log-$n.ops") ;;
    # Both sides seed the same store and wait for its compactions (--settle), so the
    # seed cancels in the difference of the two runs.
    rocksdb) cmd+=(--backend rocksdb --data-dir "$out/db" --items "$items" --ops "$n" --settle
                   bench/workloads/readrandom.lua) ;;
    bare) bin=$bare cmd=(read --dir "$out/db" --items "$items" --ops "$n" --threads 1 --settle) ;;
    rocksdb-fill) cmd+=(--backend rocksdb --data-dir "$out/db" --items "$items" --ops "$n"
                        bench/workloads/fillrandom.lua) ;;
    bare-fill) bin=$bare cmd=(fill --dir "$out/db" --items "$items" --ops "$n" --threads 1) ;;
    # Both seed the store from the log's inserts, one put at a time, and settle it.
    rocksdb-oplog) cmd+=(--backend rocksdb --data-dir "$out/db" --threads 1 --settle "$out/read-$n.ops") ;;
    bare-oplog) bin=$bare cmd=(read --dir "$out/db" --threads 1 --seed-batch 1 --oplog "$out/read-$n.ops" --settle) ;;
    keybench) bin=$(realpath "$KEYBENCH") dir=$(dirname "$(realpath "$KEYBENCH")")
              cmd=(--backend skiplist --threads 1 --ops "$n" --probe none "$PWD/workloads/null.lua") ;;
  esac
  rm -rf "$out/db"; mkdir "$out/db"
  # This runs in a command substitution, which set -e does not reach: a failed run
  # must say so rather than leave an empty count.
  (cd "$dir" && valgrind --tool=callgrind --callgrind-out-file="$cg" "$bin" "${cmd[@]}") >/dev/null 2>"$out/log" ||
    { echo "bench/callgrind.sh: the $path run of $n units failed: $bin ${cmd[*]}" >&2; tail -n 20 "$out/log" >&2; exit 1; }
  local ir
  ir=$(awk '/Collected :/ {print $NF}' "$out/log")
  [ -n "$ir" ] || { echo "bench/callgrind.sh: no instruction count in valgrind's output for $path" >&2; exit 1; }
  echo "$ir"
}

for i in $(seq "$runs"); do
  line="run $i:"
  for path in "${paths[@]}"; do
    b=$(ir "$path" "$long"); a=$(ir "$path" "$short")
    line+=$(awk -v p="$path" -v a="$a" -v b="$b" -v n=$((long - short)) 'BEGIN {printf " %s %.1f", p, (b - a) / n}')
  done
  echo "$line instructions per unit"
done
if [ ${#skipped[@]} -gt 0 ]; then
  say_skipped
  exit 2
fi
