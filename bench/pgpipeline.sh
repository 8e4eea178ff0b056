#!/usr/bin/env bash
# kvmark against pgbench -M prepared on one private PostgreSQL, point reads and
# upserts of 100-byte values over 100k keys, with the same client shape: 2 client
# threads and 128 requests in flight, as 64 connections per thread at pipeline 1 and
# as 4 connections per thread x pipeline 16 (pgbench: -j 2 -c 128, and -j 2 -c 8 with
# a script of 16 statements between \startpipeline and \endpipeline, so each of its
# "transactions" is 16 requests). kvmark runs bench/workloads/net-pgread.lua and
# net-pgput.lua, the same SELECT and upsert on a table of the same shape.
#
# Upserts run with synchronous_commit=off on both sides: pgbench before PostgreSQL 17
# has no \syncpipeline, so its 16 pipelined statements are one transaction with one
# commit, while each of kvmark's requests commits on its own; without WAL flushes a
# commit costs about the same either way, and what is compared is the protocol.
#
# Each round runs both tools back to back per test and depth and records kvmark /
# pgbench in requests per second; the figure is the median ratio over the rounds.
# Also printed: each tool's client CPU per request (user + system of its process;
# kvmark's whole process, its 100k-key load included, so a slight
# overestimate).
#
# usage: bench/pgpipeline.sh [ROUNDS] [SECS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; secs=${2:-10}
items=100000
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
[ "$rounds" -ge 1 ] && [ "$secs" -ge 1 ] || { echo "usage: bench/pgpipeline.sh [ROUNDS >= 1] [SECS >= 1]" >&2; exit 2; }

# As root, PostgreSQL runs as the 'postgres' user inside the state directory.
KVMARK_SERVERS_DIR=$(mktemp -d /tmp/kvmark-bench-servers.XXXXXX)
chmod 755 "$KVMARK_SERVERS_DIR"
export KVMARK_SERVERS_DIR
tmp=$(mktemp -d /tmp/kvmark-bench-pgpipeline.XXXXXX)
trap 'scripts/servers stop >/dev/null 2>&1 || true; rm -rf "$tmp" "$KVMARK_SERVERS_DIR"' EXIT
eval "$(scripts/servers start postgres)"
export KVMARK_POSTGRES_URL
pg_port=$(sed -E 's|.*:([0-9]+)/.*|\1|' <<<"$KVMARK_POSTGRES_URL")
command -v pgbench >/dev/null || PATH="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1):$PATH"

psql_() { psql -q -h 127.0.0.1 -p "$pg_port" -U kvmark -d kvmark -v ON_ERROR_STOP=1 "$@"; }
psql_ -c "CREATE TABLE pgbench_kv (k bytea PRIMARY KEY, v bytea NOT NULL)"
psql_ -c "INSERT INTO pgbench_kv SELECT int8send(i), convert_to(repeat('x', 100), 'UTF8') FROM generate_series(0, $items - 1) i"
psql_ -c "VACUUM ANALYZE pgbench_kv"
read_sql="SELECT v FROM pgbench_kv WHERE k = int8send(:id);"
put_sql="INSERT INTO pgbench_kv (k, v) VALUES (int8send(:id), convert_to(repeat('x', 100), 'UTF8')) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;"
script() { # NAME SQL DEPTH
  local f="$tmp/$1-$3.sql" i
  echo "\\set id random(0, $items - 1)" >"$f"
  if [ "$3" -eq 1 ]; then echo "$2" >>"$f"; echo "$f"; return; fi
  echo '\startpipeline' >>"$f"
  for i in $(seq "$3"); do echo "\\set id random(0, $items - 1)"; echo "$2"; done >>"$f"
  echo '\endpipeline' >>"$f"
  echo "$f"
}

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) exit 1; m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f (min %.3f, max %.3f, %d rounds)", m, v[1], v[NR], NR}'; }
timed() { /usr/bin/time -f "cpu %U %S" -o "$tmp/cpu" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" "$tmp/out" >&2; exit 1; }; awk '{print $2 + $3}' "$tmp/cpu"; }
# CPU microseconds per request; n/a when a side completed no request in its run (a
# short run on a loaded machine can end before the first reply), never a division by 0.
per_request() { awk -v c="$1" -v n="${2:-0}" 'BEGIN {if (n > 0) printf "%.2f", c / n * 1e6; else print "n/a"}'; }
sync_for() { if [ "$1" = put ]; then echo off; else echo on; fi; }
pg_run() { # TEST DEPTH: sets rate (requests/s) and us (client CPU us per request)
  local sql=$read_sql cpu n
  [ "$1" = put ] && sql=$put_sql
  cpu=$(PGOPTIONS="-c synchronous_commit=$(sync_for "$1")" timed pgbench -n -M prepared -h 127.0.0.1 -p "$pg_port" -U kvmark -j 2 -c $((128 / $2)) -T "$secs" \
    -f "$(script "$1" "$sql" "$2")" kvmark)
  rate=$(awk -v d="$2" '/^tps = /{print $3 * d}' "$tmp/out")
  n=$(awk -v d="$2" '/number of transactions actually processed/{split($NF, a, "/"); print a[1] * d}' "$tmp/out")
  us=$(per_request "$cpu" "$n")
}
kv_run() { # TEST DEPTH
  local cpu n
  cpu=$(timed "$kvmark" --backend postgres --engine-opt postgres.synchronous_commit="$(sync_for "$1")" --threads 2 --connections $((64 / $2)) --pipeline "$2" --items "$items" \
    --secs "$secs" --report console,tsv:"$tmp/kv.tsv" "bench/workloads/net-pg$1.lua")
  rate=$(awk '/^throughput:/{print $2}' "$tmp/out")
  n=$(awk -F'\t' 'NR == 1 {for (i = 1; i <= NF; i++) col[$i] = i} $col["phase"] == "run" && $col["op"] != "" {s += $col["count"]} END {print s}' "$tmp/kv.tsv")
  us=$(per_request "$cpu" "$n")
}

declare -A ratios rates cpus
names=()
for r in $(seq "$rounds"); do
  echo "round $r"
  for depth in 1 16; do
    for test in read put; do
      kv_run "$test" "$depth"; kr=$rate; ku=$us
      pg_run "$test" "$depth"
      k="$test P$depth"
      [ "$r" -gt 1 ] || names+=("$k")
      # A round where either side completed nothing gives no ratio, and is left out of
      # the median (its rates still show the zero).
      ratios[$k]+="$(awk -v a="${kr:-0}" -v b="${rate:-0}" 'BEGIN {if (a > 0 && b > 0) print a / b}') "
      rates[$k]+="$kr/$rate "; cpus[$k]+="$ku/$us "
      printf '  %-9s kvmark %9.0f/s %6s us cpu/req | pgbench %9.0f/s %6s us cpu/req\n' "$k" "$kr" "$ku" "$rate" "$us"
    done
  done
done

echo
echo "kvmark / pgbench, median over rounds (goal >= 1.0):"
for k in "${names[@]}"; do
  printf '  %-9s %s\n' "$k" "$(tr ' ' '\n' <<<"${ratios[$k]}" | grep . | median || echo "n/a (no round where both sides completed a request)")"
  printf '  %-9s rates kvmark/pgbench: %s\n' "" "${rates[$k]}"
  printf '  %-9s cpu us/req kvmark/pgbench: %s\n' "" "${cpus[$k]}"
done
