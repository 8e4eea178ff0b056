#!/usr/bin/env bash
# The soak of issue 21 (docs/benchmarks-history.md, "30-minute soak on RocksDB"): one long run of
# workloads/mixed.lua (gets, puts, deletes and ranges over a fixed keyspace) on
# RocksDB at a steady open-loop rate (so the store churns at the same pace throughout
# and the machine keeps room for others), its timeline sampled every SAMPLE seconds, then the resident memory of the
# kvmark process (RocksDB runs inside it) read from the timeline's proc.rss_bytes rows:
# at minute 5, its maximum from minute 5 to the end, at the end, and the throughput of
# the first and last minutes. Memory is flat when that maximum is within 10% of
# minute 5; the script exits 1 when it is not (or when the run failed).
#
# usage: bench/soak.sh [MINUTES] [THREADS] [ITEMS] [RATE] [SAMPLE]
#        (default 30 2 100000 5000 10; RATE in units per second for the whole run)
#        KVMARK=path/to/kvmark, SOAK_DIR=where the store and the report go (default
#        a temporary directory under /var/tmp, removed afterwards unless SOAK_KEEP=1);
#        SOAK_SECS=the run's length in seconds instead of MINUTES and SOAK_REF=the
#        reference in seconds instead of minute 5, for trying the script on short runs
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-30}; threads=${2:-2}; items=${3:-100000}; rate=${4:-5000}; sample=${5:-10}
kvmark=$(realpath "${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}")
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
# The reference point: minute 5 (SOAK_REF seconds, for trying the script on short runs).
ref=${SOAK_REF:-300}
secs=${SOAK_SECS:-$((minutes * 60))}
[ "$secs" -gt "$ref" ] || { echo "the run ($secs s) must end after the reference at $ref s" >&2; exit 2; }
dir=${SOAK_DIR:-$(mktemp -d /var/tmp/kvmark-soak.XXXXXX)}
mkdir -p "$dir/data"
[ "${SOAK_KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT

echo "soak: rocksdb, $threads threads, $items items, $rate units/s, $secs s, a sample every $sample s, in $dir" >&2
status=0
"$kvmark" --backend rocksdb --threads "$threads" --items "$items" --secs "$secs" \
  --rate "$rate" --timeline "$sample" --data-dir "$dir/data" --report-dir "$dir/report" \
  workloads/mixed.lua >"$dir/out.txt" 2>"$dir/err.txt" || status=$?
grep -E '^(throughput|errors|FAILED)' "$dir/out.txt" >&2 || true
[ "$status" -eq 0 ] || { echo "soak: kvmark exited $status" >&2; cat "$dir/err.txt" >&2; exit 1; }

python3 - "$(ls -d "$dir/report"/*/)timeline.tsv" "$secs" "$ref" <<'PY'
import csv, sys
path, secs, ref = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rss, rate = [], []  # (elapsed_s, value) of the timed phase
with open(path) as f:
    for row in csv.DictReader(f, delimiter="\t"):
        if row["phase"] in ("seed", "warmup"):
            continue
        t, v = float(row["elapsed_s"]), float(row["value"])
        if row["metric"] == "proc.rss_bytes":
            rss.append((t, v))
        elif row["metric"] == "wu_per_s":
            rate.append((t, v))
if not rss:
    sys.exit("soak: no proc.rss_bytes rows in " + path)
at5 = min(rss, key=lambda s: abs(s[0] - ref))
after = [v for t, v in rss if t >= at5[0]]
top, end = max(after), rss[-1]
mib = lambda b: b / 2**20
def mean(lo, hi):
    v = [r for t, r in rate if lo < t <= hi]
    return sum(v) / len(v) if v else float("nan")
growth = top / at5[1] - 1
print(f"samples: {len(rss)} over {rss[-1][0]:.0f} s")
print(f"rss at {at5[0]:.0f} s: {mib(at5[1]):.1f} MiB")
print(f"rss max from there to the end: {mib(top):.1f} MiB ({growth:+.1%})")
print(f"rss at the end ({end[0]:.0f} s): {mib(end[1]):.1f} MiB ({end[1] / at5[1] - 1:+.1%})")
print(f"rss min..max over the whole timed run: {mib(min(v for _, v in rss)):.1f}..{mib(max(v for _, v in rss)):.1f} MiB")
print(f"throughput, first minute: {mean(0, 60):.0f} wu/s; the minute to {ref:.0f} s: {mean(ref - 60, ref):.0f}; last minute: {mean(secs - 60, secs):.0f}")
verdict = "flat" if growth <= 0.10 else "GROWING"
print(f"verdict: {verdict} (the max after {ref:.0f} s within 10% of the rss at {ref:.0f} s: {growth <= 0.10})")
sys.exit(0 if growth <= 0.10 else 1)
PY
