#!/usr/bin/env bash
# What TLS costs each server engine, plain against TLS in the same run: one client
# thread puts OPS times on one key, closing its connection every 10 requests
# (--reconnect-every 10), against private servers that serve both (scripts/servers
# start --tls). For each engine, the median over RUNS rounds of the connect p50 (TCP
# connect, TLS handshake, the client's set-up) and the put p50, plain and over TLS,
# and their ratios.
#
# usage: bench/tls.sh [RUNS] [OPS] [ENGINE...]
#   RUNS rounds (default 3) of OPS puts (2000) per engine and mode; ENGINEs default
#   to every server engine.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}; ops=${2:-2000}
shift $(($# < 2 ? $# : 2))
engines=("$@"); [ ${#engines[@]} -gt 0 ] || engines=(redis redis-cluster postgres mariadb myrocks mongodb etcd)
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }

KVMARK_SERVERS_DIR=$(mktemp -d /tmp/kvmark-bench-servers.XXXXXX)
chmod 755 "$KVMARK_SERVERS_DIR"
export KVMARK_SERVERS_DIR
tmp=$(mktemp -d /tmp/kvmark-bench-tls.XXXXXX)
trap 'scripts/servers stop >/dev/null 2>&1 || true; rm -rf "$tmp" "$KVMARK_SERVERS_DIR"' EXIT
servers=()
for e in "${engines[@]}"; do
  s=$e; [ "$e" = myrocks ] && s=mariadb
  [[ " ${servers[*]} " == *" $s "* ]] || servers+=("$s")
done
eval "$(scripts/servers start --tls "${servers[@]}" | sed 's/^/export /')"
echo 'return { run = function(ctx) kv.put("k" .. ctx.thread, "v") end }' >"$tmp/puts.lua"

# The connect and put p50 (ns) of one run: "CONNECT PUT".
p50s() { # ENGINE URL [OPTION...]
  local engine=$1 url=$2 knob=url; shift 2
  [ "$engine" = etcd ] && knob=endpoints
  "$kvmark" --backend "$engine" --threads 1 --ops "$ops" --reconnect-every 10 \
    --engine-opt "$engine.$knob=$url" "$@" --report "json:$tmp/out.json" "$tmp/puts.lua" >"$tmp/log" 2>&1 ||
    { tail -5 "$tmp/log" >&2; exit 1; }
  python3 -c 'import json, sys
ops = {o["op"]: o for o in json.load(open(sys.argv[1]))["points"][0]["ops"]}
assert ops["connect"]["errors"] == 0 and ops["put"]["errors"] == 0, "errors in the run"
print(ops["connect"]["percentiles_ns"]["p50"], ops["put"]["percentiles_ns"]["p50"])' "$tmp/out.json"
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }

printf '%-14s %14s %14s %7s %12s %12s %7s\n' engine "connect plain" "connect TLS" ratio "put plain" "put TLS" ratio
for e in "${engines[@]}"; do
  s=$e; [ "$e" = myrocks ] && s=mariadb
  var=KVMARK_$(tr a-z- A-Z_ <<<"$s")_URL; tls_var=KVMARK_$(tr a-z- A-Z_ <<<"$s")_TLS_URL
  cp=(); ct=(); pp=(); pt=()
  for _ in $(seq "$runs"); do
    read -r c p < <(p50s "$e" "${!var}")
    cp+=("$c"); pp+=("$p")
    read -r c p < <(p50s "$e" "${!tls_var}" --engine-opt "$e.tls_ca=$KVMARK_TLS_CA")
    ct+=("$c"); pt+=("$p")
  done
  mcp=$(printf '%s\n' "${cp[@]}" | median); mct=$(printf '%s\n' "${ct[@]}" | median)
  mpp=$(printf '%s\n' "${pp[@]}" | median); mpt=$(printf '%s\n' "${pt[@]}" | median)
  awk -v e="$e" -v cp="$mcp" -v ct="$mct" -v pp="$mpp" -v pt="$mpt" 'BEGIN {
    printf "%-14s %11.0f us %11.0f us %6.2fx %9.0f us %9.0f us %6.2fx\n", e, cp/1000, ct/1000, ct/cp, pp/1000, pt/1000, pt/pp }'
done
echo "(p50s, median of $runs runs of $ops puts each, --reconnect-every 10, 1 thread)"
