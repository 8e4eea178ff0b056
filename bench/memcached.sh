#!/usr/bin/env bash
# kvmark against memtier_benchmark (--protocol=memcache_text) on one private memcached,
# with the same client shape as bench/pipeline.sh: 2 client threads and 128 requests
# in flight, as 64 connections per thread at pipeline 1 and as 4 connections per
# thread x pipeline 16; 100-byte values over 100k keys; SET, GET and a 50/50 mix.
# kvmark runs the spec workloads of bench/workloads/net-*.json with --backend
# memcached (its meta protocol; memtier speaks the classic text one, whose requests
# the server serves the same way).
#
# Each round runs both tools once per test and depth and records kvmark / memtier;
# the figure is the median ratio over the rounds. Also printed: each tool's rate and
# its client CPU per request (user + system seconds over requests; kvmark's is its
# run phase's, its CPU minus that of the same command with 128 operations).
#
# memtier_benchmark is not a Debian package: build it from its public source outside
# this repository and name it with MEMTIER=PATH; without it only kvmark's figures are
# printed.
#
# usage: bench/memcached.sh [ROUNDS] [OPS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; ops=${2:-1000000}
items=100000
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
memtier=${MEMTIER:-}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
[ -z "$memtier" ] || [ -x "$memtier" ] || { echo "MEMTIER=$memtier is not an executable" >&2; exit 2; }
[ "$rounds" -ge 1 ] && [ "$ops" -ge 1000 ] || { echo "usage: bench/memcached.sh [ROUNDS >= 1] [OPS >= 1000]" >&2; exit 2; }

KVMARK_SERVERS_DIR=$(mktemp -d /tmp/kvmark-bench-servers.XXXXXX)
export KVMARK_SERVERS_DIR
tmp=$(mktemp -d /tmp/kvmark-bench-memcached.XXXXXX)
trap 'scripts/servers stop >/dev/null 2>&1 || true; rm -rf "$tmp" "$KVMARK_SERVERS_DIR"' EXIT
eval "$(scripts/servers start memcached)"
export KVMARK_MEMCACHED_URL
port=${KVMARK_MEMCACHED_URL##*:}

# memtier's keys key:N with 100-byte values, present before its GETs.
if [ -n "$memtier" ]; then
  "$memtier" -s 127.0.0.1 -p "$port" --protocol=memcache_text -t 1 -c 4 --pipeline 64 --ratio 1:0 \
    --key-pattern P:P --key-prefix key: --key-minimum 1 --key-maximum "$items" -d 100 -n allkeys \
    --hide-histogram >/dev/null 2>&1
fi

timed() { /usr/bin/time -f "cpu %U %S" -o "$tmp/cpu" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" "$tmp/out" >&2; exit 1; }; awk '{print $2 + $3}' "$tmp/cpu"; }
median() { sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f (min %.3f, max %.3f, %d rounds)", m, v[1], v[NR], NR}'; }
# A spec whose run phase is N operations (the mix splits them between its two kinds).
spec() { # TEST N
  local each=$2
  [ "$1" = mix ] && each=$(($2 / 2))
  sed -E "/\"run\"/ s/\"op_count\": [0-9]+/\"op_count\": $each/g" "bench/workloads/net-$1.json" >"$tmp/net-$1-$2.json"
  echo "$tmp/net-$1-$2.json"
}
kv_run() { # TEST DEPTH
  local args=(--backend memcached --threads 2 --connections $((64 / $2)) --pipeline "$2" --items "$items")
  local cpu base
  cpu=$(timed "$kvmark" "${args[@]}" "$(spec "$1" "$ops")"); rate=$(awk '/^throughput:/{print $2}' "$tmp/out")
  base=$(timed "$kvmark" "${args[@]}" "$(spec "$1" 128)")
  us=$(awk -v c="$cpu" -v b="$base" -v n="$ops" 'BEGIN {printf "%.2f", (c - b) / (n - 128) * 1e6}')
}
mt_run() { # TEST DEPTH
  local ratio cpu conns=$((64 / $2))
  case $1 in set) ratio=1:0 ;; get) ratio=0:1 ;; mix) ratio=1:1 ;; esac
  cpu=$(timed "$memtier" -s 127.0.0.1 -p "$port" --protocol=memcache_text -t 2 -c "$conns" --pipeline "$2" \
    --ratio "$ratio" --key-pattern R:R --key-prefix key: --key-minimum 1 --key-maximum "$items" -d 100 \
    -n $((ops / (2 * conns))) --hide-histogram)
  rate=$(awk '/^Totals/{print $2}' "$tmp/out"); us=$(awk -v c="$cpu" -v n="$ops" 'BEGIN {printf "%.2f", c / n * 1e6}')
}

declare -A ratios rates cpus
names=()
for r in $(seq "$rounds"); do
  echo "round $r"
  for depth in 1 16; do
    for test in set get mix; do
      kv_run "$test" "$depth"; kr=$rate; ku=$us
      name="$test P$depth"
      if [ -z "$memtier" ]; then
        printf '  %-10s kvmark %9.0f/s %6s us cpu/req\n' "$name" "$kr" "$ku"
        continue
      fi
      mt_run "$test" "$depth"
      printf '  %-10s kvmark %9.0f/s %6s us cpu/req | memtier %9.0f/s %6s us cpu/req\n' "$name" "$kr" "$ku" "$rate" "$us"
      ratios[$name]+="$(awk -v a="$kr" -v b="$rate" 'BEGIN {print a / b}') "
      rates[$name]+="$kr/$rate "; cpus[$name]+="$ku/$us "
      [ "$r" -gt 1 ] || names+=("$name")
    done
  done
done
[ -n "$memtier" ] || exit 0

echo
echo "kvmark / memtier (memcache_text), median over rounds:"
for k in "${names[@]}"; do
  printf '  %-10s %s\n' "$k" "$(tr ' ' '\n' <<<"${ratios[$k]}" | grep . | median)"
  printf '  %-10s rates kvmark/memtier: %s\n' "" "${rates[$k]}"
  printf '  %-10s cpu us/req kvmark/memtier: %s\n' "" "${cpus[$k]}"
done
