#!/usr/bin/env bash
# Client instructions per Redis request under callgrind: the difference between a run
# of LONG and one of SHORT requests divided by LONG - SHORT, so start-up, the load and
# shut-down cancel. One client thread (callgrind runs threads one at a time anyway)
# against a private Redis, 100-byte values, for a SET:
#   spec  bench/workloads/net-set.json (its run phase set to the count)
#   lua   bench/workloads/net-set.lua
# at each DEPTH as --connections 64/DEPTH --pipeline DEPTH (64 requests in flight). The
# count moves by a few tens of instructions between runs: how many replies one wake of
# the event loop finds depends on the server's timing.
#
# With TLS=1 the same requests go over TLS (rediss://, the private CA trusted), so
# the difference from a plain run is rustls's cost per request. With ENGINE=memcached
# the same SETs go to a private memcached (its meta protocol's `ms`) instead.
#
# usage: [TLS=1] [ENGINE=redis|memcached] bench/server-instructions.sh [RUNS] [LONG] [SHORT] [DEPTH...]
#   RUNS rounds (default 3) of LONG (120000) minus SHORT (20000) requests, at each
#   DEPTH (default: 1 16).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}; long=${2:-120000}; short=${3:-20000}
shift $(($# < 3 ? $# : 3))
depths=("$@"); [ ${#depths[@]} -gt 0 ] || depths=(1 16)
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
engine=${ENGINE:-redis}
case $engine in redis | memcached) ;; *) echo "ENGINE=$engine: give redis or memcached" >&2; exit 2 ;; esac
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind (scripts/setup installs it)" >&2; exit 2; }
[ "$long" -gt "$short" ] || { echo "LONG ($long) must be above SHORT ($short)" >&2; exit 2; }
for d in "${depths[@]}"; do
  case $d in 1 | 2 | 4 | 8 | 16 | 32 | 64) ;; *) echo "DEPTH $d: give a power of two up to 64" >&2; exit 2 ;; esac
done

KVMARK_SERVERS_DIR=$(mktemp -d /tmp/kvmark-bench-servers.XXXXXX)
export KVMARK_SERVERS_DIR
tmp=$(mktemp -d /tmp/kvmark-bench-instructions.XXXXXX)
trap 'scripts/servers stop >/dev/null 2>&1 || true; rm -rf "$tmp" "$KVMARK_SERVERS_DIR"' EXIT
tls=()
var=KVMARK_${engine^^}_URL
if [ "${TLS:-0}" = 1 ]; then
  eval "$(scripts/servers start --tls "$engine")"
  tls_var=KVMARK_${engine^^}_TLS_URL
  declare "$var=${!tls_var}"
  tls=(--engine-opt "$engine.tls_ca=$KVMARK_TLS_CA")
else
  eval "$(scripts/servers start "$engine")"
fi
export "${var?}"

for n in "$long" "$short"; do
  sed -E "/\"run\"/ s/\"op_count\": [0-9]+/\"op_count\": $n/; /\"load\"/ s/\"op_count\": [0-9]+/\"op_count\": 1000/" \
    bench/workloads/net-set.json >"$tmp/set-$n.json"
done
# Instructions of one run under callgrind.
count() {
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$kvmark" "$@" >"$tmp/out" 2>"$tmp/err" ||
    { tail -5 "$tmp/err" "$tmp/out" >&2; exit 1; }
  grep -o "Collected : [0-9]*" "$tmp/err" | awk '{print $3}'
}
median() { sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.0f (min %d, max %d, %d runs)", m, v[1], v[NR], NR}'; }

declare -A per
for r in $(seq "$runs"); do
  for d in "${depths[@]}"; do
    args=(--backend "$engine" --threads 1 --connections $((64 / d)) --pipeline "$d" --items 1000 "${tls[@]}")
    a=$(count "${args[@]}" "$tmp/set-$short.json"); b=$(count "${args[@]}" "$tmp/set-$long.json")
    spec=$(((b - a) / (long - short)))
    a=$(count "${args[@]}" --ops "$short" bench/workloads/net-set.lua); b=$(count "${args[@]}" --ops "$long" bench/workloads/net-set.lua)
    lua=$(((b - a) / (long - short)))
    per["spec P$d"]+="$spec "; per["lua P$d"]+="$lua "
    echo "round $r depth $d: spec $spec, lua $lua"
  done
done
echo
echo "client instructions per SET on $engine$([ "${TLS:-0}" = 1 ] && echo " over TLS"), median (goal: spec <= 4000, lua <= 6000 at depth 1):"
for d in "${depths[@]}"; do
  for k in spec lua; do
    printf '  %-9s %s\n' "$k P$d" "$(tr ' ' '\n' <<<"${per["$k P$d"]}" | grep . | median)"
  done
done
