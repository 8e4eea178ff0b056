#!/usr/bin/env bash
# Instructions per request of the memcached protocol work alone (encode a request,
# read its reply), kvmark's own meta-protocol code (src/engine/server/memcached/meta.rs)
# against the memcache-async crate's ASCII client: callgrind's count of a run of LONG
# requests minus one of SHORT, over LONG - SHORT. Requests alternate SET (100-byte
# value) and GET (a 100-byte hit); see benches/memcached_codec.rs. For the crate it
# also prints its writes per request, each a send on a socket.
# Modes: own, crate (its add, which reads the reply, and get), crate-noreply (its
# set, which reads none, and get).
#
# usage: bench/memcached-codec-instructions.sh [LONG] [SHORT]
set -euo pipefail
cd "$(dirname "$0")/.."
long=${1:-2000000}; short=${2:-1000000}
[ "$long" -gt "$short" ] && [ "$short" -ge 0 ] ||
  { echo "usage: bench/memcached-codec-instructions.sh [LONG > SHORT] [SHORT >= 0]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind (scripts/setup installs it)" >&2; exit 2; }
target=${CARGO_TARGET_DIR:-target}
bin=${MEMCACHED_CODEC:-$(ls -t "$target"/release/deps/memcached_codec-* 2>/dev/null | grep -v '\.d$' | head -1 || true)}
[ -n "$bin" ] && [ -x "$bin" ] ||
  { echo "bench/memcached-codec-instructions.sh: build it first: cargo bench --bench memcached_codec --no-run (or set MEMCACHED_CODEC)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/kvmark-mcc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

run() { # MODE N: prints "INSTRUCTIONS WRITES"
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$bin" "$1" "$2" >"$tmp/out" 2>"$tmp/log" ||
    { echo "bench/memcached-codec-instructions.sh: $bin $1 $2 failed:" >&2; tail -n 20 "$tmp/log" >&2; exit 1; }
  echo "$(awk '/Collected :/ {print $NF}' "$tmp/log") $(sed -n 's/.*, \([0-9]*\) writes).*/\1/p' "$tmp/out")"
}
for mode in own crate crate-noreply; do
  read -r b bw < <(run "$mode" "$long"); read -r a aw < <(run "$mode" "$short")
  awk -v m="$mode" -v b="$b" -v a="$a" -v bw="$bw" -v aw="$aw" -v n=$((long - short)) 'BEGIN {
    printf "%-14s %8.1f instructions per request", m, (b - a) / n
    if (bw > 0) printf ", %.1f writes per request", (bw - aw) / n
    printf "\n" }'
done
