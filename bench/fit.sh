#!/usr/bin/env bash
# `kvmark fit` on a synthetic Twitter cache trace (issue 33): LINES requests (80% get,
# 20% set, values of 10 to 300 bytes, keys skewed over a million), fitted RUNS times;
# prints each run's requests per second (both passes over the file) and peak RSS, and
# the medians. Then once at a tenth of the length, with its distinct keys: the fit's
# memory follows the distinct keys, not the trace's length.
#
# usage: bench/fit.sh [LINES] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-10000000}; runs=${2:-3}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/kvmark-fit.XXXXXX")
trap 'rm -rf "$dir"' EXIT

gen() {
  python3 - "$1" "$2" <<'PY'
import random, sys
n, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(33)
with open(path, "w") as csv:
    per_sec = max(1, n // 600)
    for i in range(n):
        key = "k:%07d" % int(1_000_000 * rng.random() ** 3)
        if rng.random() < 0.8:
            csv.write("%d,%s,%d,0,%d,get,0\n" % (i // per_sec, key, len(key), rng.randrange(64)))
        else:
            csv.write("%d,%s,%d,%d,%d,set,0\n" % (i // per_sec, key, len(key), rng.randrange(10, 301), rng.randrange(64)))
PY
}

# One fit: prints "REQ_PER_S RSS_KB KEYS".
fit() {
  out=$( { /usr/bin/time -f "elapsed %e maxrss_kb %M" "$kvmark" fit --format twitter "$1" -o "$dir/spec.json" 2>&1; } 2>&1 )
  e=$(awk '/^elapsed/{print $2}' <<<"$out"); m=$(awk '/^elapsed/{print $4}' <<<"$out")
  keys=$(sed -n 's/^key space: \([0-9]*\) distinct keys.*/\1/p' <<<"$out")
  [ -n "$e" ] && [ -n "$keys" ] || { echo "$out" >&2; exit 1; }
  echo "$(awk -v n="$2" -v e="$e" 'BEGIN{printf "%.0f", n / (e > 0 ? e : 0.01)}') $m $keys"
}

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }

gen "$lines" "$dir/long.csv"
gen $((lines / 10)) "$dir/short.csv"
echo "trace: $lines lines, $(du -m "$dir/long.csv" | cut -f1) MB"
rates=(); rss=()
for i in $(seq "$runs"); do
  read -r r m k < <(fit "$dir/long.csv" "$lines")
  rates+=("$r"); rss+=("$m")
  echo "run $i: $r req/s, peak RSS $m KB, $k distinct keys"
done
read -r _ short_rss short_keys < <(fit "$dir/short.csv" $((lines / 10)))
echo "median: $(printf '%s\n' "${rates[@]}" | median) req/s, peak RSS $(printf '%s\n' "${rss[@]}" | median) KB at $lines lines ($k distinct keys)"
echo "at $((lines / 10)) lines: peak RSS $short_rss KB ($short_keys distinct keys)"
