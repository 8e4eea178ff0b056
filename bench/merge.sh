#!/usr/bin/env bash
# Merging segments (BENCHMARKS.md, "Scale-out"): `kvmark merge` of SEGMENTS segment
# report directories, each a 1-hour timed phase sampled every second with four
# operation kinds (benches/merge_input.rs writes them through kvmark's own sinks).
# Reports the median wall time of RUNS merges (goal: under 5 s), CPU time and peak
# memory (goal: under 200 MiB).
#
# usage: bench/merge.sh [RUNS] [SEGMENTS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
segments=${2:-16}
seconds=${3:-3600}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cargo bench -q ${BENCH_CARGO_FLAGS:-} --bench merge_input -- "$tmp/in" "$segments" "$seconds" 2>"$tmp/err" >/dev/null ||
  { cat "$tmp/err" >&2; exit 1; }
echo "input: $segments segments, $(du -sh "$tmp/in" | cut -f1), $(cat "$tmp"/in/*/timeline.tsv | wc -l) timeline rows, $(cat "$tmp"/in/*/hdr/*.hlog | grep -c '^Tag=') interval histograms"

median() {
  sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2;
    printf "%.2f (min %.2f, max %.2f, %d runs)\n", m, v[1], v[NR], NR}'
}

for _ in $(seq "$runs"); do
  rm -rf "$tmp/out"
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$kvmark" merge "$tmp"/in/segment-* --out "$tmp/out" \
    >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  read -r wall user sys rss <"$tmp/time"
  echo "$wall" >>"$tmp/wall"
  echo "$user $sys" | awk '{print $1 + $2}' >>"$tmp/cpu"
  echo "$rss" | awk '{print $1 / 1024}' >>"$tmp/rss"
done
echo "kvmark merge (${segments} x ${seconds} s at 1 s):"
echo "  wall seconds:      $(median <"$tmp/wall")"
echo "  CPU seconds:       $(median <"$tmp/cpu")"
echo "  peak RSS, MiB:     $(median <"$tmp/rss")"
echo "  merged timeline:   $(($(wc -l <"$tmp/out/timeline.tsv") - 1)) rows, $(grep -c '^Tag=' "$tmp"/out/hdr/*.hlog) interval histograms"
