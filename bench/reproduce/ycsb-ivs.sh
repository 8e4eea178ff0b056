#!/usr/bin/env bash
# The YCSB-IVS paper's experiments (shared/seeds/ycsb-ivs-paper.txt, section 5) on this
# machine, on private servers this script starts and stops: growing values, 10,000
# records of 1,000 bytes, epochs of 100,000 extends of 100 bytes (zipfian, 0.99) and
# 100,000 uniform run operations (its Table 1), kvmark's specs/ivs-c.json (YCSB C) and
# specs/ivs-a.json (YCSB A):
# - figures 2 and 4: MariaDB+MyRocks, workload C, modes main, clean and average (figure
#   4) and spread (figure 2's other baseline), over the epochs;
# - figure 3: MongoDB (the project's document-protocol server, FerretDB), workload C,
#   main, clean and average;
# - figure 6: MariaDB+InnoDB, workload A, main, clean and average.
# Each experiment runs REPEATS times on fresh stores (the paper: 5), so every epoch
# point has its mean and 95% interval as the paper charts them.
#
# Servers: MyRocks with its defaults as the paper ran it, except the block cache, which
# is CACHE (default 512 MiB, the server's default, times SCALE: the paper's 1 GB store
# was at most twice its cache; set CACHE below the store's size to read from disk);
# InnoDB's buffer pool is the paper's 4 GB of a 16 GB machine, times SCALE.
#
# usage: bench/reproduce/ycsb-ivs.sh [SCALE] [OUT] [REPEATS] [EPOCHS] [EXPERIMENTS]
#   SCALE        records, extends and run operations per epoch, as a fraction of the
#                paper's (1; kvmark --scale)
#   OUT          where the report directories and figures go (a new temporary directory)
#   REPEATS      runs of each experiment (5)
#   EPOCHS       epochs per run (100, the paper's)
#   EXPERIMENTS  a comma list of myrocks, mongodb, innodb (all three)
#   CACHE        (environment) MyRocks' block cache, in bytes or with K, M or G
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/reproduce/common.sh
reproduction ycsb-ivs 10 "${1:-1}" "${2:-}"
repeats=${3:-5}; epochs=${4:-100}; experiments=${5:-myrocks,mongodb,innodb}
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "bench/reproduce/ycsb-ivs.sh: REPEATS must be a whole number of at least 1, not '$repeats'" >&2; exit 2; }
[[ "$epochs" =~ ^[1-9][0-9]*$ ]] || { echo "bench/reproduce/ycsb-ivs.sh: EPOCHS must be a whole number of at least 1, not '$epochs'" >&2; exit 2; }
for x in ${experiments//,/ }; do
  case $x in myrocks | mongodb | innodb) ;; *) echo "bench/reproduce/ycsb-ivs.sh: unknown experiment '$x' (myrocks, mongodb, innodb)" >&2; exit 2 ;; esac
done
read -r cache pool < <(python3 -c "
s = $scale
print(max(1 << 20, int(512 * 2**20 * s)), max(8 << 20, int(4 * 2**30 * s)))")
cache=${CACHE:-$cache}
[[ "$cache" =~ ^[1-9][0-9]*[KMG]?$ ]] || { echo "bench/reproduce/ycsb-ivs.sh: CACHE must be a size in bytes, or with K, M or G, not '$cache'" >&2; exit 2; }
echo "ycsb-ivs reproduction: SCALE $scale, $epochs epochs, $repeats repeats, MyRocks block cache $cache, InnoDB buffer pool $pool bytes, out $out"

KVMARK_SERVERS_DIR=$(mktemp -d /tmp/kvmark-ivs-servers.XXXXXX)
export KVMARK_SERVERS_DIR
trap 'scripts/servers stop >/dev/null 2>&1 || true; rm -rf "$KVMARK_SERVERS_DIR" "$data"' EXIT
servers=""
case ,$experiments, in *,myrocks,* | *,innodb,*) servers="mariadb" ;; esac
case ,$experiments, in *,mongodb,*) servers="$servers mongodb" ;; esac
# shellcheck disable=SC2086 # the server names are words
# An assignment keeps scripts/servers' exit status (eval of its output would not).
urls=$(KVMARK_MARIADB_ARGS="--rocksdb-block-cache-size=$cache --innodb-buffer-pool-size=$pool" scripts/servers start $servers)
eval "$urls"
export KVMARK_MARIADB_URL KVMARK_MONGODB_URL

run() { # run NAME ENGINE SPEC MODES: one report directory OUT/NAME, its figures
  local name=$1 engine=$2 spec=$3 modes=$4
  rm -rf "${out:?}/$name" "${data:?}"/*
  "$kvmark" --backend "$engine" --data-dir "$data" --probe none --scale "$scale" --epochs "$epochs" \
    --ivs-mode "$modes" --repeat "$repeats" --report-dir "$out/$name" "$spec" >"$out/$name.out" 2>&1 \
    || { tail -n 40 "$out/$name.out" >&2; exit 1; }
  "$kvmark" plot "$out/$name" --out "$out/figures/$name" >/dev/null \
    || { echo "kvmark plot $out/$name failed" >&2; exit 1; }
}

for x in ${experiments//,/ }; do
  case $x in
    myrocks) run myrocks myrocks specs/ivs-c.json main,clean,average,spread ;;
    mongodb) run mongodb mongodb specs/ivs-c.json main,clean,average ;;
    innodb) run innodb mariadb specs/ivs-a.json main,clean,average ;;
  esac
done

python3 - "$out" "$experiments" <<'PY'
import glob, json, sys
out, experiments = sys.argv[1], sys.argv[2].split(",")
titles = {"myrocks": "Figures 2 and 4: MariaDB+MyRocks, workload C",
          "mongodb": "Figure 3: MongoDB (FerretDB), workload C",
          "innodb": "Figure 6: MariaDB+InnoDB, workload A"}
for x in experiments:
    [path] = glob.glob(f"{out}/{x}/**/results.json", recursive=True)
    points = json.load(open(path))["points"]
    modes = [m for m in ("main", "clean", "average", "spread") if any(p["epoch"]["mode"] == m for p in points if p.get("epoch"))]
    print(f"{titles[x]}: per epoch, volume MB, then per mode read mean / p99 (us), update mean (us, "
          "workload A) and wu/s; main / clean read mean")
    rows = {}
    for p in points:
        ep = p.get("epoch")
        if not ep or ep["mode"] not in modes:
            continue
        get = next((o for o in p["ops"] if o["op"] == "get"), None)
        put = next((o for o in p["ops"] if o["op"] == "put"), None)
        if not get:
            continue
        row = rows.setdefault(ep["number"], {"volume": ep["volume_bytes"] / 1e6})
        row[ep["mode"]] = (get["mean_ns"] / 1e3, get["percentiles_ns"]["p99"] / 1e3,
                           put["mean_ns"] / 1e3 if put else None, p["wu_per_s"]["median"])
    print("  epoch volume " + "".join(f"{m:>34}" for m in modes) + "  main/clean")
    def cell(c):
        upd = f"{c[2]:7.1f}" if c[2] is not None else f"{'-':>7}"
        return f"{c[0]:8.1f} / {c[1]:7.1f} {upd} {c[3]:7.0f}"
    for i in sorted(rows):
        r = rows[i]
        cells = "".join(cell(r[m]) if m in r else f"{'-':>34}" for m in modes)
        ratio = f"{r['main'][0] / r['clean'][0]:10.2f}" if "main" in r and "clean" in r else f"{'-':>10}"
        print(f"  {i:5d} {r['volume']:6.1f} {cells}  {ratio}")
PY
