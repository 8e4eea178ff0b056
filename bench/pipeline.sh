#!/usr/bin/env bash
# kvmark against redis-benchmark and memtier_benchmark on one private Redis, with the
# same client shape: 2 client threads and 128 requests in flight, as 64 connections per
# thread at pipeline 1 and as 4 connections per thread x pipeline 16; 100-byte values
# over 100k keys; SET, GET and a 50/50 mix (memtier only: redis-benchmark has no mix).
# kvmark runs a spec workload (bench/workloads/net-*.json) and a Lua one
# (bench/workloads/net-*.lua, SET and GET).
#
# Each round runs every tool once per test and depth, one after the other, and records
# kvmark / tool; the figure is the median ratio over the rounds (a paired ratio damps a
# shared machine's drift). Also printed: each tool's rate and its client CPU per request
# (user + system seconds over requests); kvmark's is its run phase's (its CPU minus that
# of the same command with 128 operations: start-up and the 100k-key load).
#
# memtier_benchmark is not a Debian package: build it from its public source outside
# this repository and name it with MEMTIER=PATH (its columns are left out without it).
#
# usage: bench/pipeline.sh [ROUNDS] [OPS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; ops=${2:-1000000}
items=100000
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
memtier=${MEMTIER:-}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
command -v redis-benchmark >/dev/null || { echo "needs redis-benchmark (scripts/servers start redis installs it)" >&2; exit 2; }
[ -z "$memtier" ] || [ -x "$memtier" ] || { echo "MEMTIER=$memtier is not an executable" >&2; exit 2; }
[ "$rounds" -ge 1 ] && [ "$ops" -ge 1000 ] || { echo "usage: bench/pipeline.sh [ROUNDS >= 1] [OPS >= 1000]" >&2; exit 2; }

KVMARK_SERVERS_DIR=$(mktemp -d /tmp/kvmark-bench-servers.XXXXXX)
export KVMARK_SERVERS_DIR
tmp=$(mktemp -d /tmp/kvmark-bench-pipeline.XXXXXX)
trap 'scripts/servers stop >/dev/null 2>&1 || true; rm -rf "$tmp" "$KVMARK_SERVERS_DIR"' EXIT
eval "$(scripts/servers start redis)"
export KVMARK_REDIS_URL
port=${KVMARK_REDIS_URL##*:}

# The keys each tool reads, present before any GET: redis-benchmark's key:%012d and
# memtier's key:N, 100-byte values.
redis-benchmark -h 127.0.0.1 -p "$port" -c 16 -P 64 -t set -d 100 -r "$items" -n $((items * 8)) -q >/dev/null
if [ -n "$memtier" ]; then
  "$memtier" -s 127.0.0.1 -p "$port" -t 1 -c 4 --pipeline 64 --ratio 1:0 --key-pattern P:P --key-prefix key: \
    --key-minimum 1 --key-maximum "$items" -d 100 -n allkeys --hide-histogram >/dev/null 2>&1
fi

timed() { /usr/bin/time -f "cpu %U %S" -o "$tmp/cpu" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" "$tmp/out" >&2; exit 1; }; awk '{print $2 + $3}' "$tmp/cpu"; }
per_op_us() { awk -v c="$1" -v n="$2" 'BEGIN {printf "%.2f", c / n * 1e6}'; }
median() { sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f (min %.3f, max %.3f, %d rounds)", m, v[1], v[NR], NR}'; }
# A spec whose run phase is N operations (a group's op_count is its budget; the mix
# splits them between its two kinds).
spec() { # TEST N
  local each=$2
  [ "$1" = mix ] && each=$(($2 / 2))
  sed -E "/\"run\"/ s/\"op_count\": [0-9]+/\"op_count\": $each/g" "bench/workloads/net-$1.json" >"$tmp/net-$1-$2.json"
  echo "$tmp/net-$1-$2.json"
}
# kvmark's CPU seconds per request of its run phase, and its rate.
kv_run() { # TEST DEPTH KIND(spec|lua)
  local test=$1 depth=$2 kind=$3 conns=$((64 / $2)) cpu base wl small
  local args=(--backend redis --threads 2 --connections "$conns" --pipeline "$depth" --items "$items")
  if [ "$kind" = spec ]; then
    wl=$(spec "$test" "$ops"); small=$(spec "$test" 128)
    cpu=$(timed "$kvmark" "${args[@]}" "$wl"); rate=$(awk '/^throughput:/{print $2}' "$tmp/out")
    base=$(timed "$kvmark" "${args[@]}" "$small")
  else
    cpu=$(timed "$kvmark" "${args[@]}" --ops "$ops" "bench/workloads/net-$test.lua"); rate=$(awk '/^throughput:/{print $2}' "$tmp/out")
    base=$(timed "$kvmark" "${args[@]}" --ops 128 "bench/workloads/net-$test.lua")
  fi
  us=$(awk -v c="$cpu" -v b="$base" -v n="$ops" 'BEGIN {printf "%.2f", (c - b) / (n - 128) * 1e6}')
}
rb_run() { # TEST DEPTH
  local cpu
  cpu=$(timed redis-benchmark -h 127.0.0.1 -p "$port" --threads 2 -c $((128 / $2)) -P "$2" -t "$1" -d 100 -r "$items" -n "$ops" --csv)
  rate=$(awk -F'"' 'NR == 2 {print $4}' "$tmp/out"); us=$(per_op_us "$cpu" "$ops")
}
mt_run() { # TEST DEPTH
  local ratio cpu conns=$((64 / $2))
  case $1 in set) ratio=1:0 ;; get) ratio=0:1 ;; mix) ratio=1:1 ;; esac
  cpu=$(timed "$memtier" -s 127.0.0.1 -p "$port" -t 2 -c "$conns" --pipeline "$2" --ratio "$ratio" --key-pattern R:R \
    --key-prefix key: --key-minimum 1 --key-maximum "$items" -d 100 -n $((ops / (2 * conns))) --hide-histogram)
  rate=$(awk '/^Totals/{print $2}' "$tmp/out"); us=$(per_op_us "$cpu" "$ops")
}

declare -A ratios rates cpus
record() { # NAME KVMARK_RATE KVMARK_US TOOL_RATE TOOL_US
  ratios[$1]+="$(awk -v a="$2" -v b="$4" 'BEGIN {print a / b}') "
  rates[$1]+="$2/$4 "; cpus[$1]+="$3/$5 "
  printf '  %-22s kvmark %9.0f/s %6s us cpu/req | tool %9.0f/s %6s us cpu/req\n' "$1" "$2" "$3" "$4" "$5"
}

names=()
for r in $(seq "$rounds"); do
  echo "round $r"
  for depth in 1 16; do
    for test in set get mix; do
      kv_run "$test" "$depth" spec; kr=$rate; ku=$us
      kinds=(spec)
      if [ "$test" != mix ]; then kv_run "$test" "$depth" lua; lr=$rate; lu=$us; kinds+=(lua); fi
      if [ "$test" != mix ]; then
        rb_run "$test" "$depth"
        record "$test P$depth spec/rb" "$kr" "$ku" "$rate" "$us"
        record "$test P$depth lua/rb" "$lr" "$lu" "$rate" "$us"
        [ "$r" -gt 1 ] || names+=("$test P$depth spec/rb" "$test P$depth lua/rb")
      fi
      if [ -n "$memtier" ]; then
        mt_run "$test" "$depth"
        record "$test P$depth spec/memtier" "$kr" "$ku" "$rate" "$us"
        [ "$r" -gt 1 ] || names+=("$test P$depth spec/memtier")
        if [ "$test" != mix ]; then
          record "$test P$depth lua/memtier" "$lr" "$lu" "$rate" "$us"
          [ "$r" -gt 1 ] || names+=("$test P$depth lua/memtier")
        fi
      fi
    done
  done
done

echo
echo "kvmark / tool, median over rounds (goal >= 1.0 for the spec workload):"
for k in "${names[@]}"; do
  printf '  %-22s %s\n' "$k" "$(tr ' ' '\n' <<<"${ratios[$k]}" | grep . | median)"
  printf '  %-22s rates kvmark/tool: %s\n' "" "${rates[$k]}"
  printf '  %-22s cpu us/req kvmark/tool: %s\n' "" "${cpus[$k]}"
done
