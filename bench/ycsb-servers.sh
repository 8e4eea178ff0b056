#!/usr/bin/env bash
# YCSB-A on every server engine beside RocksDB in-process: what the network and the
# server cost (issue 18, item 5). bench/ycsb-a-60s.json is specs/ycsb-a.json (100k
# records of 1000 bytes, then reads and updates half and half, scrambled zipfian) with
# its run phase bounded to 60 s. Closed loop, 2 threads x 32 connections (in process:
# 2 threads, nothing in flight to overlap), one run per
# engine, each against a private server that scripts/servers starts for it alone and
# stops afterwards, so no idle server shares the cores with the one measured. (Until
# 2026-11-29 mongodb ran 5k records: FerretDB's SQLite backend loaded about 17 a second.
# On its PostgreSQL backend it loads the 100k like the others; rocksdb-small, RocksDB at
# SMALL_RECORDS (5000) records, stays for the older rows' side.)
#
# usage: bench/ycsb-servers.sh [ENGINE...]   (default: every server engine and rocksdb)
# Prints one table row per run; keeps each run's report under $OUT (/var/tmp/ycsb-servers).
# RECORDS (100000) and RUN_SECS (60) shrink every engine's load and its
# run phase, for trying the script quickly.
set -euo pipefail
cd "$(dirname "$0")/.."
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
out=${OUT:-/var/tmp/ycsb-servers}
records=${SMALL_RECORDS:-5000}
full=${RECORDS:-100000}
run_secs=${RUN_SECS:-60}
engines=("$@")
[ ${#engines[@]} -gt 0 ] || engines=(redis postgres mariadb myrocks mongodb etcd redis-cluster rocksdb)
export KVMARK_SERVERS_DIR=${KVMARK_SERVERS_DIR:-$(mktemp -d /tmp/ycsb-servers.XXXXXX)}
trap 'scripts/servers stop >/dev/null 2>&1 || true' EXIT
mkdir -p "$out"
# The spec with N records loaded and a run phase of RUN_SECS.
spec_of() { # N FILE
  sed -e "s/\"op_count\": 100000/\"op_count\": $1/" -e "s/\"duration\": 60/\"duration\": $run_secs/" \
    bench/ycsb-a-60s.json > "$2"
}
small="$out/ycsb-a-60s-${records}.json"
spec_of "$records" "$small"
large=bench/ycsb-a-60s.json
if [ "$full" != 100000 ] || [ "$run_secs" != 60 ]; then
  large="$out/ycsb-a-60s-${full}.json"
  spec_of "$full" "$large"
fi

# The server each engine runs on (none: in-process).
server_of() {
  case $1 in
    myrocks) echo mariadb ;;
    rocksdb | rocksdb-small) echo "" ;;
    *) echo "$1" ;;
  esac
}

printf '| engine | records | run ops/s | get p50 / p99 | put p50 / p99 | load put p50 / p99 | errors | load average |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for e in "${engines[@]}"; do
  spec=$large
  n=$full
  backend=$e
  if [ "$e" = rocksdb-small ]; then spec=$small; n=$records; fi
  [ "$e" = rocksdb-small ] && backend=rocksdb
  server=$(server_of "$e")
  if [ -n "$server" ]; then
    eval "$(scripts/servers start "$server" | sed 's/^/export /')"
  fi
  data=$(mktemp -d /var/tmp/ycsb-servers-data.XXXXXX)
  dir="$out/$e"
  rm -rf "$dir"
  # In process there are no requests in flight to overlap: one per thread.
  opts=(--connections 32)
  [ -z "$server" ] && opts=(--connections 1)
  status=0
  "$kvmark" --backend "$backend" --threads 2 --probe none \
    --data-dir "$data" --report-dir "$dir" "${opts[@]}" "$spec" > "$out/$e.log" 2>&1 || status=$?
  load=$(cut -d' ' -f1 /proc/loadavg)
  rm -rf "$data"
  [ -n "$server" ] && scripts/servers stop "$server" >/dev/null
  results=$(ls "$dir"/*/results.json 2>/dev/null | head -1)
  if [ -z "$results" ]; then
    # The run wrote no report: say so in its row and go on to the next engine.
    printf '| %s | %s | no report (exit %s; see %s) | | | | | %s |\n' "$e" "$n" "$status" "$out/$e.log" "$load"
    continue
  fi
  python3 - "$e" "$n" "$status" "$load" "$results" <<'EOF'
import json, sys
engine, records, status, load, path = sys.argv[1:6]
points = json.load(open(path))["points"]
if not points:
    # Stopped before its point ended (results.json says "complete": false).
    print(f"| {engine} | {int(records):,} | no finished point (exit {status}) | | | | | {load} |")
    sys.exit(0)
point = points[0]
phases = {ph["name"]: ph for ph in point["phases"]}
def op(phase, name):
    return next((o for o in phases[phase]["ops"] if o["op"] == name), None)
def ns(v):
    return f"{v / 1e6:.2f} ms" if v >= 1e6 else f"{v / 1e3:.2f} us"
def lat(o):
    return f"{ns(o['percentiles_ns']['p50'])} / {ns(o['percentiles_ns']['p99'])}" if o else "-"
run = phases["run"]
errors = sum(o["errors"] for ph in point["phases"] if ph["name"] != "all" for o in ph["ops"])
ops = sum(o["count"] for o in run["ops"])
print(f"| {engine} | {int(records):,} | {ops / run['wall_s']:,.0f} | {lat(op('run', 'get'))} | "
      f"{lat(op('run', 'put'))} | {lat(op('load', 'put'))} | {errors} (exit {status}) | {load} |")
EOF
done
