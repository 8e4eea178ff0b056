#!/usr/bin/env bash
# KVZone (Gokhale et al., "KVZone and the Search for a Write-Optimized Key-Value Store",
# HotStorage '10) on this machine: Berkeley DB against Tokyo Cabinet as KVZone's
# Figures 3 and 4 measure them, driven open loop at target rates (KVZone's "throughput
# target"), and the closed-loop write throughput of its Table 1 (SQLite included).
# Alphard, the paper's own store, is not public and is not run.
#
# - Figure 3 (a, b): 50% inserts and 50% deletes of values of 4 to 16 KB (the paper does
#   not give Figure 3's value size; specs/kvzone-write.json's is used) on a store
#   prewritten with PREWRITE keys, at target rates of 1000 to 64000 operations per second:
#   achieved rate and mean write response time (from each operation's intended start,
#   so a backlog counts, as KVZone's latencies of seconds at overload show it does).
# - Figure 4 (a, b, d): the same with 50% reads, 25% inserts, 25% deletes.
# - Figure 3 (c): achieved write rate, closed loop, at value sizes of 4 to 256 KB.
# - Table 1: closed-loop write throughput (MB/s) and write latency (mean, standard
#   deviation) of SQLite, Berkeley DB and Tokyo Cabinet at 4 to 16 KB values.
#
# Every point runs SECS seconds (10 at SCALE 1), one client thread, on a fresh store
# on this machine's disk (/var/tmp), with each library's defaults except that no store
# flushes to the disk at each commit: bdb.txn_sync=nosync and sqlite.synchronous=off,
# as Tokyo Cabinet does not by default (the paper does not say how it set them).
# Reports and figures go to OUT.
#
# usage: bench/reproduce/kvzone.sh [SCALE] [OUT]
#   SCALE  seconds per point / 10, and the prewrite / 10000 (1; 0.1 for a quick look)
#   OUT    where the report directories and figures go (a new temporary directory)
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/reproduce/common.sh
reproduction kvzone 100 "$@"
secs=$(python3 -c "print(max(1, round(10 * $scale, 1)))")
prewrite=$(python3 -c "print(max(100, int(10000 * $scale)))")
# The paper's targets went from 1000 to 8000 per second, where its stores saturated on
# its SSD; on this machine they saturate later, so the sweep goes on to 64000.
rates=1000,2000,4000,8000,16000,32000,64000
echo "kvzone reproduction: $secs s per point, prewrite $prewrite keys, out $out"

# spec NAME VALUE_MIN VALUE_MAX MIX: a prewrite group and a run group of SECS seconds.
spec() {
  python3 - "$out/$1.json" "$prewrite" "$secs" "$2" "$3" "$4" <<'PY'
import json, sys
path, prewrite, secs, lo, hi, mix = sys.argv[1:]
ops = {"write": {"inserts": 1, "point_deletes": 1},
       "mixed": {"point_queries": 2, "inserts": 1, "point_deletes": 1}}[mix]
run = {"name": "run", "duration": float(secs)}
run.update({op: {"op_count": n * 1000} for op, n in ops.items()})
# The prewrite is paced at the point's target rate too (--rate applies to every group
# without a rate of its own), so the point's merged figures hold only paced operations.
prewrite = {"name": "prewrite", "inserts": {"op_count": int(prewrite)}}
name = path.rsplit("/", 1)[1].removesuffix(".json")
json.dump({"name": f"kvzone-{name}",
           "sections": [{"key_len": 24,
                         "val": {"uniform": {"len": {"uniform": {"min": int(lo), "max": int(hi)}}}},
                         "groups": [prewrite, run]}]},
          open(path, "w"))
PY
}

run() { # run NAME KVMARK-ARGS...: one report directory OUT/NAME
  local name=$1; shift
  rm -rf "${out:?}/$name"
  "$kvmark" --data-dir "$data" --probe none --engine-opt bdb.txn_sync=nosync --report-dir "$out/$name" "$@" \
    >"$out/$name.out" 2>&1 \
    || { cat "$out/$name.out" >&2; exit 1; }
}

spec write 4096 16384 write
spec mixed 4096 16384 mixed
run fig3 --backend bdb,tokyocabinet --rate "$rates" "$out/write.json"
run fig4 --backend bdb,tokyocabinet --rate "$rates" "$out/mixed.json"
for kb in 4 16 64 256; do
  spec "size$kb" $((kb * 1024)) $((kb * 1024)) write
done
run fig3c --backend bdb,tokyocabinet "$out/size4.json" "$out/size16.json" "$out/size64.json" "$out/size256.json"
run table1 --backend sqlite,bdb,tokyocabinet --engine-opt sqlite.synchronous=off "$out/write.json"
for r in fig3 fig4 fig3c table1; do
  "$kvmark" plot "$out/$r" --out "$out/figures/$r" >/dev/null || { echo "kvmark plot $out/$r failed" >&2; exit 1; }
done

python3 - "$out" <<'PY'
import glob, json, sys
out = sys.argv[1]

def points(run):
    [path] = glob.glob(f"{out}/{run}/**/results.json", recursive=True)
    return json.load(open(path))["points"]

def phase_op(p, op):
    ph = next(x for x in p["phases"] if x["name"] == "run")
    return next((o for o in ph["ops"] if o["op"] == op), None), ph

def ms(ns):
    return ns / 1e6

for run, title in [("fig3", "Figure 3 (a, b): 50% inserts, 50% deletes"),
                   ("fig4", "Figure 4 (a, b, d): 50% reads, 25% inserts, 25% deletes")]:
    print(f"{title}: target ops/s, then per engine achieved ops/s, mean and p99 put response time (ms)"
          + (", mean get response time (ms)" if run == "fig4" else ""))
    rows = {}
    for p in points(run):
        put, ph = phase_op(p, "put")
        get, _ = phase_op(p, "get")
        cell = f"{ph['ops_per_s']['median']:8.0f} {ms(put['response']['mean_ns']):9.1f} {ms(put['response']['percentiles_ns']['p99']):9.1f}"
        if get:
            cell += f" {ms(get['response']['mean_ns']):9.1f}"
        rows.setdefault(p["rate"]["per_s"], {})[p["engine"]] = cell
    engines = sorted({e for r in rows.values() for e in r})
    print("  target   " + "   ".join(f"{e:>36}" for e in engines))
    for target in sorted(rows):
        print(f"  {target:6.0f}   " + "   ".join(f"{rows[target].get(e, '-'):>36}" for e in engines))

print("Figure 3 (c): closed loop, 50% inserts, 50% deletes: achieved ops/s and write MB/s by value size")
for p in points("fig3c"):
    put, ph = phase_op(p, "put")
    mbps = put["bytes"] / ph["wall_s"] / 1e6
    print(f"  {p['workload']:>8} {p['engine']:>13}: {ph['ops_per_s']['median']:8.0f} ops/s, {mbps:7.1f} MB/s")

print("Table 1: closed loop, 4-16 KB values: write MB/s, write latency mean and standard deviation (ms)")
for p in points("table1"):
    put, ph = phase_op(p, "put")
    mbps = put["bytes"] / ph["wall_s"] / 1e6
    print(f"  {p['engine']:>13}: {mbps:7.1f} MB/s, {ms(put['mean_ns']):8.3f} ms mean, {ms(put['stdev_ns']):8.3f} ms stdev")
PY
