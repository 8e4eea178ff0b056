#!/usr/bin/env bash
# kvmark on a Redis Cluster (3 primaries, the store spread over every slot) against
# redis-benchmark --cluster, and against kvmark on one Redis primary alone, with the
# same client shape as bench/pipeline.sh: 2 client threads and 128 requests in flight
# (64 connections per thread at pipeline 1, 4 connections per thread x pipeline 16 at
# depth 16; redis-benchmark's clients are spread over the primaries, each bound to
# one); 100-byte values over 100k keys; SET and GET
# (kvmark: the spec workloads bench/workloads/net-set.json and net-get.json).
#
# Each round runs every command once per test and depth and records the ratios
# kvmark-cluster / redis-benchmark-cluster and kvmark-cluster / kvmark-one-primary;
# the figures are medians over the rounds. Client, servers and both clusters share
# this machine's cores: a cluster of 3 primaries on 2 cores is not 3 primaries' worth.
#
# usage: bench/cluster.sh [ROUNDS] [OPS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; ops=${2:-1000000}
items=100000
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
command -v redis-benchmark >/dev/null || { echo "needs redis-benchmark (scripts/servers start redis installs it)" >&2; exit 2; }
[ "$rounds" -ge 1 ] && [ "$ops" -ge 1000 ] || { echo "usage: bench/cluster.sh [ROUNDS >= 1] [OPS >= 1000]" >&2; exit 2; }

KVMARK_SERVERS_DIR=$(mktemp -d /tmp/kvmark-bench-servers.XXXXXX)
export KVMARK_SERVERS_DIR
tmp=$(mktemp -d /tmp/kvmark-bench-cluster.XXXXXX)
trap 'scripts/servers stop >/dev/null 2>&1 || true; rm -rf "$tmp" "$KVMARK_SERVERS_DIR"' EXIT
eval "$(scripts/servers start redis redis-cluster)"
export KVMARK_REDIS_URL KVMARK_REDIS_CLUSTER_URL
seed=${KVMARK_REDIS_CLUSTER_URL%%,*}; seed_port=${seed##*:}

# redis-benchmark's keys (key:%012d over every slot), present before its GETs.
redis-benchmark -h 127.0.0.1 -p "$seed_port" --cluster -c 8 -P 64 -t set -d 100 -r "$items" -n $((items * 8)) -q >/dev/null

median() { sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f (min %.3f, max %.3f, %d rounds)", m, v[1], v[NR], NR}'; }
spec() { # TEST N: the spec with a run phase of N operations
  sed -E "/\"run\"/ s/\"op_count\": [0-9]+/\"op_count\": $2/g" "bench/workloads/net-$1.json" >"$tmp/net-$1-$2.json"
  echo "$tmp/net-$1-$2.json"
}
kv_rate() { # BACKEND TEST DEPTH
  "$kvmark" --backend "$1" --threads 2 --connections $((64 / $3)) --pipeline "$3" --items "$items" \
    "$(spec "$2" "$ops")" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" "$tmp/out" >&2; exit 1; }
  awk '/^throughput:/{print $2}' "$tmp/out"
}
rb_rate() { # TEST DEPTH
  # Its CSV follows a list of the primaries it found.
  redis-benchmark -h 127.0.0.1 -p "$seed_port" --cluster --threads 2 -c $((128 / $2)) -P "$2" \
    -t "$1" -d 100 -r "$items" -n "$ops" --csv 2>"$tmp/err" | awk -F'"' -v t="${1^^}" '$2 == t {print $4}'
}

declare -A vs_rb vs_one rates
names=()
for r in $(seq "$rounds"); do
  echo "round $r"
  for depth in 1 16; do
    for test in set get; do
      c=$(kv_rate redis-cluster "$test" "$depth"); o=$(kv_rate redis "$test" "$depth"); b=$(rb_rate "$test" "$depth")
      [ -n "$b" ] || { echo "redis-benchmark --cluster printed no rate:" >&2; cat "$tmp/err" >&2; exit 1; }
      k="$test P$depth"
      [ "$r" -gt 1 ] || names+=("$k")
      vs_rb[$k]+="$(awk -v a="$c" -v b="$b" 'BEGIN {print a / b}') "
      vs_one[$k]+="$(awk -v a="$c" -v b="$o" 'BEGIN {print a / b}') "
      rates[$k]+="$c/$b/$o "
      printf '  %-8s kvmark cluster %9.0f/s | redis-benchmark cluster %9.0f/s | kvmark one primary %9.0f/s\n' "$k" "$c" "$b" "$o"
    done
  done
done

echo
echo "medians over rounds:"
for k in "${names[@]}"; do
  printf '  %-8s kvmark cluster / redis-benchmark --cluster: %s\n' "$k" "$(tr ' ' '\n' <<<"${vs_rb[$k]}" | grep . | median)"
  printf '  %-8s kvmark cluster / kvmark one primary:        %s\n' "$k" "$(tr ' ' '\n' <<<"${vs_one[$k]}" | grep . | median)"
  printf '  %-8s rates (cluster/redis-benchmark/one primary): %s\n' "" "${rates[$k]}"
done
