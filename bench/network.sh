#!/usr/bin/env bash
# Server engines against the servers' own load generators, side by side in one run,
# with the same client concurrency: kvmark at 2 threads x 64 connections against
# redis-benchmark --threads 2 -c 128 (SET, GET, and GET pipelined 16 deep against
# kvmark's mget of 16 keys), and kvmark's point reads on PostgreSQL against pgbench
# -j 2 -c 128 running the same SELECT from a custom script. Private Redis and
# PostgreSQL instances on loopback (scripts/servers), stopped at exit.
#
# Each round runs both tools back to back and records kvmark / tool; the median ratio
# over the rounds is the figure (this shared 2-core machine drifts; a paired ratio
# damps it). Also printed: each tool's rate and its client CPU per operation (user +
# system seconds of the client process over its operations). kvmark's is that of the
# run phase: its CPU minus that of the same command with --ops 128 (start-up and
# loading the 100k keys, which redis-benchmark and pgbench are spared), over the
# operations in between.
#
# usage: bench/network.sh [ROUNDS] [OPS] [PG_SECS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; ops=${2:-500000}; pg_secs=${3:-10}
items=100000
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }

# A state directory of this run's own, world-readable: as root, PostgreSQL runs as
# the 'postgres' user inside it.
KVMARK_SERVERS_DIR=$(mktemp -d /tmp/kvmark-bench-servers.XXXXXX)
chmod 755 "$KVMARK_SERVERS_DIR"
export KVMARK_SERVERS_DIR
tmp=$(mktemp -d /tmp/kvmark-bench-network.XXXXXX)
trap 'scripts/servers stop >/dev/null 2>&1 || true; rm -rf "$tmp" "$KVMARK_SERVERS_DIR"' EXIT
eval "$(scripts/servers start redis postgres)"
export KVMARK_REDIS_URL KVMARK_POSTGRES_URL
redis_port=${KVMARK_REDIS_URL##*:}
pg_port=$(sed -E 's|.*:([0-9]+)/.*|\1|' <<<"$KVMARK_POSTGRES_URL")
command -v pgbench >/dev/null || PATH="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1):$PATH"

median() { sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f (min %.3f, max %.3f, %d rounds)", m, v[1], v[NR], NR}'; }
# Runs a command under /usr/bin/time; its output goes to $tmp/out, its CPU seconds
# (user + system) are echoed.
timed() { /usr/bin/time -f "cpu %U %S" -o "$tmp/cpu" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }; awk '{print $2 + $3}' "$tmp/cpu"; }
kv_rate() { awk '/^throughput:/{print $2}' "$tmp/out"; }
# n/a when a side completed no request (pgbench's clients can spend a short run
# connecting on a busy machine).
per_op_us() { awk -v c="$1" -v n="${2:-0}" 'BEGIN {if (n > 0) printf "%.2f", c / n * 1e6; else print "n/a"}'; }
# kvmark's CPU seconds with --ops 128 (start-up, load and 128 units), for
# `kv_per_op_us`: the arguments are the benchmark's own, less its --ops or --secs.
base_ops=128
kv_base() { timed "$kvmark" --ops "$base_ops" "$@"; }
kv_per_op_us() { # CPU BASE_CPU OPS [OPS_PER_UNIT]
  awk -v c="$1" -v b="$2" -v n="$3" -v k="${4:-1}" -v u="$base_ops" 'BEGIN {if (n > u * k) printf "%.2f", (c - b) / (n - u * k) * 1e6; else print "n/a"}'
}

# pgbench's table: the rows net-pgread.lua loads (8-byte big-endian keys from
# int8send, 100-byte values) in a table of the same shape as the postgres engine's.
psql_() { psql -q -h 127.0.0.1 -p "$pg_port" -U kvmark -d kvmark -v ON_ERROR_STOP=1 "$@"; }
psql_ -c "CREATE TABLE pgbench_kv (k bytea PRIMARY KEY, v bytea NOT NULL)"
psql_ -c "INSERT INTO pgbench_kv SELECT int8send(i), convert_to(repeat('x', 100), 'UTF8') FROM generate_series(0, $items - 1) i"
psql_ -c "VACUUM ANALYZE pgbench_kv"
cat >"$tmp/read.sql" <<EOF
\set id random(0, $items - 1)
SELECT v FROM pgbench_kv WHERE k = int8send(:id);
EOF

declare -A ratios rates cpus
record() { # NAME KVMARK_RATE TOOL_RATE KVMARK_US TOOL_US
  if ! awk -v a="${2:-0}" -v b="${3:-0}" 'BEGIN {exit !(a > 0 && b > 0)}'; then
    printf '  %-8s n/a: kvmark %s ops/s, tool %s ops/s (a side completed no request; the round is left out)\n' "$1" "${2:-0}" "${3:-0}"
    return
  fi
  ratios[$1]+="$(awk -v a="$2" -v b="$3" 'BEGIN {print a / b}') "
  rates[$1]+="$2/$3 "
  cpus[$1]+="$4/$5 "
  printf '  %-8s kvmark %10.0f ops/s %6s us cpu/op | tool %10.0f ops/s %6s us cpu/op\n' "$1" "$2" "$4" "$3" "$5"
}

for r in $(seq "$rounds"); do
  echo "round $r"
  for test in set get; do
    c=$(timed redis-benchmark -h 127.0.0.1 -p "$redis_port" --threads 2 -c 128 -t "$test" -d 100 -r "$items" -n "$ops" --csv)
    tool=$(awk -F'"' 'NR == 2 {print $4}' "$tmp/out"); tool_us=$(per_op_us "$c" "$ops")
    args=(--backend redis --threads 2 --connections 64 --items "$items" "bench/workloads/net-$test.lua")
    c=$(timed "$kvmark" --ops "$ops" "${args[@]}"); rate=$(kv_rate)
    record "$test" "$rate" "$tool" "$(kv_per_op_us "$c" "$(kv_base "${args[@]}")" "$ops")" "$tool_us"
  done
  c=$(timed redis-benchmark -h 127.0.0.1 -p "$redis_port" --threads 2 -c 128 -t get -P 16 -d 100 -r "$items" -n "$ops" --csv)
  tool=$(awk -F'"' 'NR == 2 {print $4}' "$tmp/out"); tool_us=$(per_op_us "$c" "$ops")
  units=$((ops / 16))
  args=(--backend redis --threads 2 --connections 64 --batch 16 --items "$items" bench/workloads/net-get.lua)
  c=$(timed "$kvmark" --ops "$units" "${args[@]}"); rate=$(awk -v w="$(kv_rate)" 'BEGIN {print w * 16}')
  record "mget16" "$rate" "$tool" "$(kv_per_op_us "$c" "$(kv_base "${args[@]}")" "$((units * 16))" 16)" "$tool_us"

  c=$(timed pgbench -n -M prepared -h 127.0.0.1 -p "$pg_port" -U kvmark -c 128 -j 2 -T "$pg_secs" -f "$tmp/read.sql" kvmark)
  tool=$(awk '/^tps = /{print $3}' "$tmp/out"); done_n=$(awk '/number of transactions actually processed/{print $NF}' "$tmp/out")
  tool_us=$(per_op_us "$c" "${done_n%%/*}")
  args=(--backend postgres --threads 2 --connections 64 --items "$items" bench/workloads/net-pgread.lua)
  c=$(timed "$kvmark" --secs "$pg_secs" --report console,tsv:"$tmp/pg.tsv" "${args[@]}")
  rate=$(kv_rate); n=$(awk -F'\t' 'NR == 1 {for (i = 1; i <= NF; i++) col[$i] = i} $col["op"] == "get" && $col["phase"] == "run" {print $col["count"]}' "$tmp/pg.tsv" | head -1)
  record "pgread" "$rate" "$tool" "$(kv_per_op_us "$c" "$(kv_base "${args[@]}")" "${n:-1}")" "$tool_us"
done

echo
echo "kvmark / tool, median over rounds (goal >= 0.9):"
for k in set get mget16 pgread; do
  printf '  %-8s %s\n' "$k" "$(tr ' ' '\n' <<<"${ratios[$k]:-}" | grep . | median || echo "n/a (no round where both sides completed a request)")"
  printf '  %-8s rates kvmark/tool: %s\n' "" "${rates[$k]:-}"
  printf '  %-8s cpu us/op kvmark/tool: %s\n' "" "${cpus[$k]:-}"
done
