#!/usr/bin/env bash
# Plots (docs/benchmarks-history.md, "Plots"): `kvmark plot --html` on a synthetic result directory
# the size of a long run (benches/plot_input.rs: 100 grid points, a 10-minute timeline
# sampled every 0.1 s, every system metric, 20 engine metrics per engine, a histogram
# log per point). Reports the median wall time of RUNS runs (target: under 10 s), CPU
# time and peak memory, the figures written, and the size of report.html (target:
# under 5 MB).
#
# usage: bench/plots.sh [RUNS]   (BENCH_CARGO_FLAGS=--no-default-features skips the C++ engines)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cargo bench -q ${BENCH_CARGO_FLAGS:-} --bench plot_input -- "$tmp/run" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
echo "input: $(du -sh "$tmp/run" | cut -f1) in $tmp/run ($(wc -l <"$tmp/run/timeline.tsv") timeline rows, $(ls "$tmp/run/hdr" | wc -l) histogram logs)"

median() {
  sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2;
    printf "%.2f (min %.2f, max %.2f, %d runs)\n", m, v[1], v[NR], NR}'
}

for _ in $(seq "$runs"); do
  rm -rf "$tmp/figs"
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$kvmark" plot "$tmp/run" --out "$tmp/figs" --html 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
  read -r wall user sys rss <"$tmp/time"
  echo "$wall" >>"$tmp/wall"
  echo "$user $sys" | awk '{print $1 + $2}' >>"$tmp/cpu"
  echo "$rss" | awk '{print $1 / 1024}' >>"$tmp/rss"
done
html=$(stat -c %s "$tmp/figs/report.html")
echo "kvmark plot RUN --out FIGS --html:"
echo "  wall seconds:      $(median <"$tmp/wall")"
echo "  CPU seconds:       $(median <"$tmp/cpu")"
echo "  peak RSS, MiB:     $(median <"$tmp/rss")"
echo "  figures:           $(ls "$tmp/figs" | grep -c '\.png$') PNG, $(du -sh "$tmp/figs" | cut -f1) with report.html"
echo "  report.html:       $html bytes ($(awk -v b="$html" 'BEGIN {printf "%.2f", b / 1048576}') MiB)"
awk -v w="$(median <"$tmp/wall" | cut -d' ' -f1)" -v h="$html" 'BEGIN {
  printf "  targets:           time %s (< 10 s), size %s (< 5 MB)\n", (w < 10 ? "met" : "MISSED"), (h < 5000000 ? "met" : "MISSED") }'
