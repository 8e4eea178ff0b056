#!/usr/bin/env bash
# Trace replay against kvmark's own operation log (issue 33): a synthetic Twitter
# cache trace of LINES requests (80% get, 20% set, values of 10 to 300 bytes, keys
# skewed over a million) and the same requests as an operation log, replayed on the
# skiplist on one thread, alternately, RUNS times each. Prints each run's rate and
# peak RSS, the medians, and the trace's rate as a ratio of the log's. Then both
# again at a tenth of the length: the store holds the same keys under either, so the
# trace's peak RSS over the log's is the replayer's own memory, which must not grow
# with the trace.
#
# usage: bench/trace-replay.sh [LINES] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-10000000}; runs=${2:-5}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/kvmark-trace.XXXXXX")
trap 'rm -rf "$dir"' EXIT

# Writes LINES requests as cache.csv (Twitter's format) and cache.ops (the same
# requests: get as P, set as U with a value of the recorded size).
gen() {
  python3 - "$1" "$2/cache.csv" "$2/cache.ops" <<'PY'
import random, string, sys
n, csv_path, ops_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
rng = random.Random(33)
chars = string.ascii_letters + string.digits
pool = "".join(rng.choice(chars) for _ in range(1 << 16))
with open(csv_path, "w") as csv, open(ops_path, "w") as ops:
    per_sec = max(1, n // 600)
    for i in range(n):
        key = "k:%07d" % int(1_000_000 * rng.random() ** 3)
        client = rng.randrange(64)
        if rng.random() < 0.8:
            csv.write("%d,%s,%d,0,%d,get,0\n" % (i // per_sec, key, len(key), client))
            ops.write("P %s\n" % key)
        else:
            size = rng.randrange(10, 301)
            at = rng.randrange(len(pool) - size)
            csv.write("%d,%s,%d,%d,%d,set,0\n" % (i // per_sec, key, len(key), size, client))
            ops.write("U %s %s\n" % (key, pool[at:at + size]))
PY
}

# One replay: prints "RATE RSS_KB".
replay() {
  out=$( { /usr/bin/time -f "maxrss_kb %M" "$kvmark" replay "$@" --report console 2>&1; } 2>&1 )
  r=$(awk '/^throughput:/{print $2}' <<<"$out"); m=$(awk '/^maxrss_kb/{print $2}' <<<"$out")
  [ -n "$r" ] || { echo "$out" >&2; exit 1; }
  echo "$r $m"
}

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }

mkdir -p "$dir/long" "$dir/short"
gen "$lines" "$dir/long"
gen $((lines / 10)) "$dir/short"
echo "trace: $lines lines, $(du -m "$dir/long/cache.csv" | cut -f1) MB; log: $(du -m "$dir/long/cache.ops" | cut -f1) MB"
trace=(); log=(); trace_rss=(); log_rss=()
for i in $(seq "$runs"); do
  read -r r m < <(replay --format twitter "$dir/long/cache.csv")
  trace+=("$r"); trace_rss+=("$m")
  read -r r2 m2 < <(replay "$dir/long/cache.ops")
  log+=("$r2"); log_rss+=("$m2")
  echo "run $i: trace $r req/s (peak RSS $m KB), log $r2 ops/s (peak RSS $m2 KB)"
done
read -r _ short_rss < <(replay --format twitter "$dir/short/cache.csv")
read -r _ short_log_rss < <(replay "$dir/short/cache.ops")
t=$(printf '%s\n' "${trace[@]}" | median); l=$(printf '%s\n' "${log[@]}" | median)
echo "median: trace $t req/s, log $l ops/s, trace/log $(awk -v a="$t" -v b="$l" 'BEGIN{printf "%.2f", a/b}')"
tr=$(printf '%s\n' "${trace_rss[@]}" | median); lr=$(printf '%s\n' "${log_rss[@]}" | median)
echo "peak RSS at $lines lines: trace $tr KB, log $lr KB, trace over log $((${tr%.*} - ${lr%.*})) KB"
echo "peak RSS at $((lines / 10)) lines: trace $short_rss KB, log $short_log_rss KB, trace over log $((short_rss - short_log_rss)) KB"
