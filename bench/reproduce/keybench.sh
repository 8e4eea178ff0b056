#!/usr/bin/env bash
# The keybench study of TidesDB v9.3.6 against RocksDB v11.1.1 (shared/seeds/
# keybench-tidesdb-rocksdb-analysis.txt) on this machine, with the study's own
# configuration (samples/rocksdb-vs-tidesdb.cnf: 64 MiB memtable and 64 MiB block cache
# per engine, no compression, bloom filters, the L0 triggers it set) and its four
# workloads (workloads/mixed.lua, cart.lua, scan.lua, batch.lua at 256 keys per call,
# the batch size its table reports), each engine seeded once per workload and the
# thread sweep run against that store, one run per point.
#
# Scaled to this 2-core machine:
# - threads: the study's 1, 8 and 16 on 8 cores (16 hardware threads) are one thread,
#   one per core, and two per core: 1, 2 and 4 here;
# - compaction workers: RocksDB's max_background_jobs 8 and TidesDB's
#   num_compaction_threads 4 on 8 cores become 2 and 1;
# - size: SCALE times the study's 500,000 keys of 4 KiB (cart: 90,000 users), with the
#   memtable and block cache scaled alike (at least 4 MiB each), so the data stays 16
#   times the 128 MiB of memtable and block cache each engine gets; SCALE times the
#   study's 60 s per point.
# Stores live on this machine's disk (/var/tmp), not tmpfs. Reports go to OUT.
#
# usage: bench/reproduce/keybench.sh [SCALE] [OUT]
#   SCALE  fraction of the study's size and duration (1; 0.05 for a quick look)
#   OUT    where the report directories and figures go (a new temporary directory)
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/reproduce/common.sh
reproduction keybench 1 "$@"
read -r secs items users cache_mib < <(python3 -c "
s = $scale
print(max(1, round(60 * s)), max(2000, int(500000 * s)), max(400, int(90000 * s)), max(4, round(64 * s)))")
echo "keybench reproduction: $secs s per point, $items keys of 4 KiB ($users cart users), memtable and block cache ${cache_mib} MiB each, out $out"

run() { # run NAME KVMARK-ARGS...: one report directory OUT/NAME
  local name=$1 rc=0; shift
  rm -rf "${out:?}/$name" "${data:?}"/*
  "$kvmark" --config samples/rocksdb-vs-tidesdb.cnf --probe none \
    --secs "$secs" --threads 1,2,4 --batch 256 --repeat 1 --items "$items" --users "$users" \
    --data-dir "$data" --report-dir "$out/$name" \
    --engine-opt "rocksdb.write_buffer_size=${cache_mib}M" \
    --engine-opt "rocksdb.block_based_table_factory={block_cache=${cache_mib}M;filter_policy=bloomfilter:10:false}" \
    --engine-opt rocksdb.max_background_jobs=2 \
    --engine-opt "tidesdb.write_buffer_size=${cache_mib}M" --engine-opt "tidesdb.block_cache_size=${cache_mib}M" \
    --engine-opt tidesdb.num_compaction_threads=1 \
    "$@" >"$out/$name.out" 2>&1 || rc=$?
  # Exit 1 is a run that finished but saw engine errors: a finding, counted in the
  # tables below; anything else (or no results) stops the script.
  if [ "$rc" -gt 1 ] || ! ls "$out/$name"/*/results.json >/dev/null 2>&1; then
    cat "$out/$name.out" >&2; exit 1
  fi
  "$kvmark" plot "$out/$name" --out "$out/figures/$name" >/dev/null \
    || { echo "kvmark plot $out/$name failed" >&2; exit 1; }
}

for w in mixed cart scan batch; do
  run "$w" "workloads/$w.lua"
done

python3 - "$out" <<'PY'
import glob, json, sys
out = sys.argv[1]

def points(run):
    [path] = glob.glob(f"{out}/{run}/**/results.json", recursive=True)
    return json.load(open(path))["points"]

def us(ns):
    return ns / 1e3

for run, rate, what in [("mixed", "wu_per_s", "wu/s"), ("cart", "wu_per_s", "wu/s"),
                        ("scan", "wu_per_s", "scans/s"), ("batch", "ops_per_s", "ops/s at 256 keys per call")]:
    rows = {}
    for p in points(run):
        ops = {o["op"]: o for o in p["ops"]}
        write = ops.get("put") or ops.get("mput")
        tail = f"{us(write['percentiles_ns']['p99']):10.0f} {write['max_ns'] / 1e6:9.1f}" if write else " " * 20
        hit = f"{100 * p['hit_rate']:5.1f}%" if p.get("hit_rate") is not None else "     -"
        status = p["status"] if not p["errors"] else f"{p['errors']}err"
        rows.setdefault(p["threads"], {})[p["engine"]] = f"{p[rate]['median']:10.0f} {tail} {hit} {status:>7}"
    print(f"{run}: threads, then per engine {what}, write p99 (us) and max (ms), get hit rate, "
          "status (or its engine errors)")
    engines = sorted({e for r in rows.values() for e in r})
    print("  threads " + "".join(f"{e:>48}" for e in engines))
    for t in sorted(rows):
        print(f"  {t:7d} " + "".join(f"{rows[t].get(e, '-'):>48}" for e in engines))
    for p in points(run):
        for o in p["ops"]:
            if o["errors"]:
                print(f"  {p['engine']} at {p['threads']} threads: {o['errors']} of {o['count']} {o['op']} calls "
                      f"failed: {o['first_error']}")
PY
