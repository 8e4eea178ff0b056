#!/usr/bin/env bash
# Instructions per request of the RESP2 protocol work alone (encode a command into the
# write buffer, cut the reply off the read buffer and read it), kvmark's own codec
# (src/engine/server/redis/resp.rs) against the redis-protocol crate's: callgrind's
# count of a run of LONG requests minus one of SHORT, over LONG - SHORT. Requests
# alternate SET (100-byte value, reply +OK) and GET (a 100-byte reply); see
# benches/resp_codec.rs.
# Modes: own, crate (redis-protocol's zero-copy decode_range), crate-owned (its
# copying decode).
#
# usage: bench/resp-instructions.sh [LONG] [SHORT]
set -euo pipefail
cd "$(dirname "$0")/.."
long=${1:-2000000}; short=${2:-1000000}
[ "$long" -gt "$short" ] && [ "$short" -ge 0 ] || { echo "usage: bench/resp-instructions.sh [LONG > SHORT] [SHORT >= 0]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind (scripts/setup installs it)" >&2; exit 2; }
target=${CARGO_TARGET_DIR:-target}
bin=${RESP_CODEC:-$(ls -t "$target"/release/deps/resp_codec-* 2>/dev/null | grep -v '\.d$' | head -1 || true)}
[ -n "$bin" ] && [ -x "$bin" ] ||
  { echo "bench/resp-instructions.sh: build it first: cargo bench --bench resp_codec --no-run (or set RESP_CODEC)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/kvmark-resp.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

ir() { # MODE N
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$bin" "$1" "$2" >/dev/null 2>"$tmp/log" ||
    { echo "bench/resp-instructions.sh: $bin $1 $2 failed:" >&2; tail -n 20 "$tmp/log" >&2; exit 1; }
  awk '/Collected :/ {print $NF}' "$tmp/log"
}
for mode in own crate crate-owned; do
  b=$(ir "$mode" "$long"); a=$(ir "$mode" "$short")
  awk -v m="$mode" -v b="$b" -v a="$a" -v n=$((long - short)) 'BEGIN {printf "%-12s %8.1f instructions per request\n", m, (b - a) / n}'
done
