#!/usr/bin/env bash
# Scale-out against one server (docs/benchmarks-history.md, "Scale-out"): 1, 2 and 3 segments of
# the same workload, started by Open MPI's mpirun against one Redis on this machine,
# then merged; prints each count's total throughput and merged p99.
#
# usage: bench/segments.sh [SECS] [THREADS]   (needs KVMARK_REDIS_URL: scripts/servers start redis)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
threads=${2:-2}
kvmark=$(realpath "${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}")
[ -n "${KVMARK_REDIS_URL:-}" ] || { echo "set KVMARK_REDIS_URL (scripts/servers start redis)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
printf "%-9s %-9s %14s  %s\n" segments threads "wu/s (total)" "merged p99 per operation"
for n in 1 2 3; do
  start=$(( $(date +%s) + 3 ))
  mpirun --oversubscribe -np "$n" "$kvmark" --segment auto --start-at "$start" --backend redis \
    --threads "$threads" --secs "$secs" --items 100000 --timeline 1 --report-dir "$tmp/s$n" \
    specs/ycsb-a.json >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  if [ "$n" -eq 1 ]; then
    # One segment of one is the whole run, which merge does not take: read it as is.
    json=$(ls -d "$tmp/s1"/*/)results.json
  else
    "$kvmark" merge "$tmp/s$n"/* --out "$tmp/m$n" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    json=$tmp/m$n/results.json
  fi
  python3 - "$json" "$n" "$threads" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["points"][0]
p99 = ", ".join(f'{op["op"]} {op["percentiles_ns"]["p99"] / 1000:.1f} us' for op in p["ops"])
units = sum(r["units"] for r in p["repeats"])
wall = sum(r["wall_s"] for r in p["repeats"])
print(f"{sys.argv[2]:<9} {int(sys.argv[3]) * int(sys.argv[2]):<9} {units / wall:14.0f}  {p99}")
PY
done
