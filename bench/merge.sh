#!/usr/bin/env bash
# Merging segments (docs/benchmarks-history.md, "Scale-out"): `kvmark merge` of SEGMENTS segment
# report directories, each a 1-hour timed phase sampled every second with four
# operation kinds (benches/merge_input.rs writes them through kvmark's own sinks).
# Reports the median wall time of RUNS merges (goal: under 5 s), CPU time and peak
# memory (goal: under 200 MiB).
#
# With KVMARK_BEFORE set to another kvmark binary, each run also merges the same
# inputs with it (alternating) and the CPU ratio before/after is printed.
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

# time BINARY SUFFIX: one merge, its figures appended to $tmp/{wall,cpu,rss}SUFFIX.
time_merge() {
  rm -rf "$tmp/out"
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$1" merge "$tmp"/in/segment-* --out "$tmp/out" \
    >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  read -r wall user sys rss <"$tmp/time"
  echo "$wall" >>"$tmp/wall$2"
  echo "$user $sys" | awk '{print $1 + $2}' >>"$tmp/cpu$2"
  echo "$rss" | awk '{print $1 / 1024}' >>"$tmp/rss$2"
}

for _ in $(seq "$runs"); do
  [ -z "${KVMARK_BEFORE:-}" ] || time_merge "$KVMARK_BEFORE" .before
  time_merge "$kvmark" ""
done
if [ -n "${KVMARK_BEFORE:-}" ]; then
  echo "before ($KVMARK_BEFORE):"
  echo "  wall seconds:      $(median <"$tmp/wall.before")"
  echo "  CPU seconds:       $(median <"$tmp/cpu.before")"
  echo "  peak RSS, MiB:     $(median <"$tmp/rss.before")"
fi
echo "kvmark merge (${segments} x ${seconds} s at 1 s):"
echo "  wall seconds:      $(median <"$tmp/wall")"
echo "  CPU seconds:       $(median <"$tmp/cpu")"
echo "  peak RSS, MiB:     $(median <"$tmp/rss")"
echo "  merged timeline:   $(($(wc -l <"$tmp/out/timeline.tsv") - 1)) rows, $(grep -c '^Tag=' "$tmp"/out/hdr/*.hlog) interval histograms"
if [ -n "${KVMARK_BEFORE:-}" ]; then
  b=$(median <"$tmp/cpu.before" | cut -d' ' -f1)
  a=$(median <"$tmp/cpu" | cut -d' ' -f1)
  echo "  CPU before/after:  $(awk -v b="$b" -v a="$a" 'BEGIN {printf "%.1fx\n", b / a}')"
fi
