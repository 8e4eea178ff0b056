#!/usr/bin/env bash
# The Tectonic paper's generator comparison (shared/seeds/tectonic-paper.txt, section 4,
# figures 3 and 4) and its dynamic workload (figure 2) on this machine.
#
# Generation: each tool writes every operation of a workload to a file on this
# machine's disk, timed by GNU time as the paper did (wall, user and system time, peak
# RSS), RUNS times alternating the tools; the table gives medians. The workloads are
# the paper's, at SCALE times their size:
# - figure 3: YCSB A to F, 1 M inserts of 1 KiB values (keys "usertable:user" and 19
#   digits), then 1 M operations in YCSB's mixes (A 50% reads, 50% updates; B 95/5;
#   C reads only; D 95% reads of the newest keys, 5% inserts; E 95% short scans, 5%
#   inserts; F 50% reads, 50% read-modify-writes), skew from beta(0.1, 5) as Tectonic's
#   own YCSB specs draw it (YCSB itself draws zipfian, its "latest" for D);
# - figure 4: KVBench I to V as Tectonic's paper reads them (I: 1 M inserts of 512 B
#   keys and values, then 20% reads and 80% empty reads with hot 2-character prefixes;
#   II: 100 k inserts of 32 B, then inserts, deletes, empty reads and updates 40/10/15/25;
#   III: 1 M inserts, then 50% beta updates, 25% beta reads, 25% empty reads;
#   IV: 1 M inserts, then 50% beta updates, 50% range deletes of selectivity 1e-7;
#   V: 950 k inserts with hot prefixes among 50 k reads).
# kvmark (`kvmark gen --plain`: Tectonic's own line format) always runs. The others run
# when named; build them from their public sources outside this repository
# (docs/reproductions.md, "Tectonic", says how and at which commits):
#   TECTONIC=PATH  tectonic-cli (SSD-Brandeis/tectonic, `cargo build --release`); it
#                  reads the same spec files as kvmark
#   YCSB=DIR       a directory holding YCSB's core jar and its dependencies (site.ycsb:
#                  core 0.17.0); YCSB's own workloads A-F (its zipfian and latest
#                  choosers, 10 fields of 100 bytes) into a file through a buffered
#                  writer, as the paper adapted YCSB: bench/reproduce/tectonic/FileDB.java,
#                  compiled here against that jar
#   KVBENCH=PATH   KVBench's load_gen (BU-DiSC/K-V-Workload-Generator, `make`): a
#                  preload run, then the operations with --PL; it has no
#                  read-modify-write, so no YCSB F
# Dynamic workload: the two-phase spec of figure 2 (1 M inserts of 32 B keys and 1 KiB
# values with 10 k updates, then 1 k point queries and 50 range queries of 1% to 10% of
# the keys, both uniform), run on RocksDB, with its operations and rate per phase.
#
# usage: bench/reproduce/tectonic.sh [SCALE] [OUT] [RUNS]
#   SCALE  fraction of the paper's operation counts (1; 0.01 for a quick look)
#   OUT    where the specs, the timings and the dynamic run's report go (a new
#          temporary directory)
#   RUNS   timed runs of each tool and workload (3; 0 runs the dynamic workload alone)
#   LIMIT  (environment) seconds a tool may take for one workload (120): past it the
#          run is stopped, shown as ">LIMIT s" and not run again (KVBench re-sorts its
#          keys at each range operation, so its YCSB E and KVBench IV grow with the
#          square of the size)
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/reproduce/common.sh
reproduction tectonic 10 "${1:-1}" "${2:-}"
runs=${3:-3}
limit=${LIMIT:-120}
[[ "$limit" =~ ^[1-9][0-9]*$ ]] || { echo "bench/reproduce/tectonic.sh: LIMIT must be a whole number of seconds, not '$limit'" >&2; exit 2; }
[[ "$runs" =~ ^[0-9]+$ ]] || { echo "bench/reproduce/tectonic.sh: RUNS must be a whole number, not '$runs'" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time (Debian package time; scripts/setup test installs it)" >&2; exit 2; }
tectonic=${TECTONIC:-}; ycsb=${YCSB:-}; kvbench=${KVBENCH:-}
[ -z "$tectonic" ] || [ -x "$tectonic" ] || { echo "TECTONIC=$tectonic is not an executable" >&2; exit 2; }
[ -z "$kvbench" ] || [ -x "$kvbench" ] || { echo "KVBENCH=$kvbench is not an executable" >&2; exit 2; }
if [ -n "$ycsb" ]; then
  ls "$ycsb"/core-*.jar >/dev/null 2>&1 || { echo "YCSB=$ycsb holds no core-*.jar (YCSB's core and its dependencies)" >&2; exit 2; }
  command -v javac >/dev/null || { echo "YCSB needs a JDK (javac)" >&2; exit 2; }
  rm -rf "${out:?}/ycsb-classes"; mkdir -p "$out/ycsb-classes"
  javac -d "$out/ycsb-classes" -cp "$ycsb/*" bench/reproduce/tectonic/FileDB.java \
    || { echo "bench/reproduce/tectonic/FileDB.java does not compile against YCSB=$ycsb" >&2; exit 2; }
fi
echo "tectonic reproduction: SCALE $scale, $runs runs per tool and workload, out $out"
echo "tools: kvmark${tectonic:+, tectonic-cli}${ycsb:+, YCSB}${kvbench:+, KVBench load_gen}"

# The specs, in Tectonic's schema (kvmark reads it unchanged), at SCALE, and each
# tool's command lines per workload, as shell words in OUT/commands/TOOL-WORKLOAD.
rm -rf "${out:?}/specs" "$out/commands" "$out/timings"
mkdir -p "$out/specs" "$out/commands" "$out/timings"
python3 - "$out" "$scale" <<'PY'
import json, sys
out, scale = sys.argv[1], float(sys.argv[2])
n = lambda c: max(10, int(c * scale))
beta = lambda a, b: {"beta": {"alpha": a, "beta": b}}
user_key = {"segmented": {"segments": ["usertable:user", {"uniform": {"len": 19, "character_set": "numeric"}}],
                          "separator": ""}}
fixed = lambda length: {"uniform": {"len": length}}
hot = lambda rest: {"segmented": {"separator": "", "segments": [
    {"hot_range": {"len": 2, "probability": 0.7, "amount": 10}}, {"uniform": {"len": rest}}]}}
load = lambda count, key, val: {"inserts": {"op_count": n(count), "key": key, "val": fixed(val)}}

def ycsb(run):
    return [load(1_000_000, user_key, 1024), run]

specs = {
    "ycsb-a": ycsb({"point_queries": {"op_count": n(500_000), "selection": beta(0.1, 5)},
                    "updates": {"op_count": n(500_000), "val": fixed(128), "selection": beta(0.1, 5)}}),
    "ycsb-b": ycsb({"point_queries": {"op_count": n(950_000), "selection": beta(0.1, 5)},
                    "updates": {"op_count": n(50_000), "val": fixed(128), "selection": beta(0.1, 5)}}),
    "ycsb-c": ycsb({"point_queries": {"op_count": n(1_000_000), "selection": beta(0.1, 5)}}),
    "ycsb-d": ycsb({"point_queries": {"op_count": n(950_000), "selection": beta(5, 0.1)},
                    "inserts": {"op_count": n(50_000), "key": user_key, "val": fixed(1024)}}),
    "ycsb-e": ycsb({"range_queries": {"op_count": n(950_000), "selectivity": {"uniform": {"min": 0, "max": 0.001}},
                                      "selection": beta(0.1, 5)},
                    "inserts": {"op_count": n(50_000), "key": user_key, "val": fixed(1024)}}),
    "ycsb-f": ycsb({"point_queries": {"op_count": n(500_000), "selection": beta(0.1, 5)},
                    "merges": {"op_count": n(500_000), "val": fixed(128), "selection": beta(0.1, 5)}}),
    "kvbench-i": [load(1_000_000, fixed(512), 512),
                  {"point_queries": {"op_count": n(200_000)},
                   "empty_point_queries": {"op_count": n(800_000), "key": hot(30)}}],
    "kvbench-ii": [load(100_000, fixed(32), 32),
                   {"inserts": {"op_count": n(400_000), "key": fixed(32), "val": fixed(32)},
                    "point_deletes": {"op_count": n(100_000)},
                    "empty_point_queries": {"op_count": n(150_000), "key": fixed(512)},
                    "updates": {"op_count": n(250_000), "val": fixed(512)}}],
    "kvbench-iii": [load(1_000_000, fixed(512), 512),
                    {"updates": {"op_count": n(500_000), "val": fixed(512), "selection": beta(0.1, 5)},
                     "point_queries": {"op_count": n(250_000), "selection": beta(0.1, 5)},
                     "empty_point_queries": {"op_count": n(250_000), "key": fixed(512)}}],
    "kvbench-iv": [load(1_000_000, fixed(512), 512),
                   {"updates": {"op_count": n(500_000), "val": fixed(512), "selection": beta(0.1, 5)},
                    "range_deletes": {"op_count": n(500_000), "selectivity": 1e-7, "range_format": "StartEnd"}}],
    "kvbench-v": [{"inserts": {"op_count": n(950_000), "key": hot(510), "val": fixed(512)},
                   "point_queries": {"op_count": n(50_000)}}],
    # Figure 2: a write-heavy phase, then a read-heavy one on the same keys.
    "dynamic": [{"name": "write-heavy",
                 "inserts": {"op_count": n(1_000_000), "key": fixed(32), "val": fixed(1024)},
                 "updates": {"op_count": n(10_000), "val": fixed(1024)}},
                {"name": "read-heavy",
                 "point_queries": {"op_count": n(1_000)},
                 "range_queries": {"op_count": max(2, int(50 * scale)),
                                   "selectivity": {"uniform": {"min": 0.01, "max": 0.1}}}}],
}
for name, groups in specs.items():
    json.dump({"sections": [{"groups": groups}]}, open(f"{out}/specs/{name}.json", "w"), indent=1)

# YCSB's own workload files, as properties (they are not in its core jar).
records = n(1_000_000)
core = f"-p recordcount={records} -p operationcount={records}"
ycsb_mix = {
    "a": "-p readproportion=0.5 -p updateproportion=0.5 -p requestdistribution=zipfian",
    "b": "-p readproportion=0.95 -p updateproportion=0.05 -p requestdistribution=zipfian",
    "c": "-p readproportion=1 -p updateproportion=0 -p requestdistribution=zipfian",
    "d": "-p readproportion=0.95 -p updateproportion=0 -p insertproportion=0.05 -p requestdistribution=latest",
    "e": "-p readproportion=0 -p updateproportion=0 -p scanproportion=0.95 -p insertproportion=0.05 "
         "-p requestdistribution=zipfian -p maxscanlength=100 -p scanlengthdistribution=uniform",
    "f": "-p readproportion=0.5 -p updateproportion=0 -p readmodifywriteproportion=0.5 -p requestdistribution=zipfian",
}
for w, mix in ycsb_mix.items():
    base = f"-db kvmark.ycsb.FileDB -p workload=site.ycsb.workloads.CoreWorkload {core} {mix}"
    open(f"{out}/commands/ycsb-ycsb-{w}", "w").write(f"-load {base}\n-t {base}\n")

# KVBench's load_gen: a preload run that writes workload.txt, then the operations with
# --PL (entry size -E and key share -L give the key and value sizes; 2 = beta).
b01 = lambda d: f"--{d} 2 --{d}_BALPHA 0.1 --{d}_BBETA 5"
ycsb_entry = f"-E {33 + 1024} -L {33 / (33 + 1024):.6f}"
kvb = {
    "ycsb-a": (f"-I {records} {ycsb_entry}", f"-Q {n(500_000)} -U {n(500_000)} {b01('ED')} {b01('UD')} {ycsb_entry}"),
    "ycsb-b": (f"-I {records} {ycsb_entry}", f"-Q {n(950_000)} -U {n(50_000)} {b01('ED')} {b01('UD')} {ycsb_entry}"),
    "ycsb-c": (f"-I {records} {ycsb_entry}", f"-Q {n(1_000_000)} {b01('ED')} {ycsb_entry}"),
    "ycsb-d": (f"-I {records} {ycsb_entry}",
               f"-Q {n(950_000)} --ED 2 --ED_BALPHA 5 --ED_BBETA 0.1 -I {n(50_000)} {ycsb_entry}"),
    "ycsb-e": (f"-I {records} {ycsb_entry}", f"-S {n(950_000)} -Y 0.0005 -I {n(50_000)} {ycsb_entry}"),
    "kvbench-i": (f"-I {records} -E 1024", f"-Q {n(1_000_000)} -Z 0.8 -E 1024"),
    "kvbench-ii": (f"-I {n(100_000)} -E 64", f"-I {n(400_000)} -D {n(100_000)} -Q {n(150_000)} -Z 1 -U {n(250_000)} -E 64"),
    "kvbench-iii": (f"-I {records} -E 1024", f"-U {n(500_000)} {b01('UD')} -Q {n(500_000)} -Z 0.5 {b01('ED')} -E 1024"),
    "kvbench-iv": (f"-I {records} -E 1024", f"-U {n(500_000)} {b01('UD')} -R {n(500_000)} -y 0.0000001 -E 1024"),
    "kvbench-v": (None, f"-I {n(950_000)} -Q {n(50_000)} -E 1024"),
}
for w, (pre, ops) in kvb.items():
    lines = ([pre, f"--PL {ops} --OP ops.txt"] if pre else [ops])
    open(f"{out}/commands/kvbench-{w}", "w").write("\n".join(lines) + "\n")
PY

# timed TOOL WORKLOAD CMD...: one timed step (its standard error kept in DATA/err and
# shown when it fails), its wall time and GNU time's user and system time and peak RSS
# appended to OUT/timings/TOOL-WORKLOAD (a run of several steps is several lines); a
# step past LIMIT leaves TOOL-WORKLOAD.timeout instead, and the pair is not run again.
timed() {
  local tool=$1 w=$2 start=$EPOCHREALTIME rc=0; shift 2
  [ ! -e "$out/timings/$tool-$w.timeout" ] || return 0
  /usr/bin/time -o "$data/time" -f "%U %S %M" timeout "$limit" "$@" 2>"$data/err" || rc=$?
  if [ "$rc" -eq 124 ]; then
    echo "$limit" >"$out/timings/$tool-$w.timeout"; rm -f "$out/timings/$tool-$w"; return 0
  fi
  # KVBench's load_gen exits 1 after a run that wrote its file (its main ends so).
  if [ "$rc" -ne 0 ] && ! { [ "$tool" = kvbench ] && [ "$rc" -eq 1 ]; }; then
    echo "$tool on $w failed (exit $rc): $*" >&2; tail -n 20 "$data/err" >&2; return 1
  fi
  # GNU time's wall clock has centiseconds; bash's clock gives microseconds.
  echo "$round $(python3 -c "print($EPOCHREALTIME - $start)") $(tail -n 1 "$data/time")" >>"$out/timings/$tool-$w"
}

# wrote TOOL WORKLOAD: the lines the tool's run left in DATA/*.txt, recorded in the
# first round (a check that every tool wrote the workload's operations), then removed;
# a finished run that wrote nothing failed, whatever its exit status said.
wrote() {
  if [ ! -e "$out/timings/$1-$2.timeout" ]; then
    local lines
    lines=$({ cat "$data"/*.txt 2>/dev/null || true; } | wc -l)
    [ "$lines" -gt 0 ] || { echo "$1 on $2 wrote no operations" >&2; tail -n 20 "$data/err" >&2; exit 1; }
    [ "$round" -ne 1 ] || echo "$lines" >"$out/timings/$1-$2.lines"
  fi
  rm -f "$data"/*.txt
}

workloads="ycsb-a ycsb-b ycsb-c ycsb-d ycsb-e ycsb-f kvbench-i kvbench-ii kvbench-iii kvbench-iv kvbench-v"
for round in $(seq 1 "$runs"); do
  for w in $workloads; do
    rm -rf "${data:?}"/*
    timed kvmark "$w" "$kvmark" gen --plain "$out/specs/$w.json" -o "$data/ops.txt" >/dev/null || exit 1
    wrote kvmark "$w"
    if [ -n "$tectonic" ]; then
      (cd "$data" && timed tectonic "$w" "$tectonic" generate -w "$out/specs/$w.json" -o "$data/ops.txt" >/dev/null) || exit 1
      wrote tectonic "$w"
    fi
    if [ -n "$ycsb" ] && [ -f "$out/commands/ycsb-$w" ]; then
      while read -r -a args; do
        timed ycsb "$w" java -cp "$ycsb/*:$out/ycsb-classes" site.ycsb.Client "${args[@]}" \
          -p filedb.path="$data/ops.txt" </dev/null >/dev/null || exit 1
      done <"$out/commands/ycsb-$w"
      wrote ycsb "$w"
    fi
    if [ -n "$kvbench" ] && [ -f "$out/commands/kvbench-$w" ]; then
      while read -r -a args; do
        (cd "$data" && timed kvbench "$w" "$kvbench" "${args[@]}" </dev/null >/dev/null) || exit 1
      done <"$out/commands/kvbench-$w"
      wrote kvbench "$w"
    fi
  done
done

# The dynamic workload on RocksDB, and its log's operations per phase.
rm -rf "${data:?}"/* "${out:?}/dynamic"
"$kvmark" --backend rocksdb --threads 1 --repeat 1 --probe none --timeline 0.5 --data-dir "$data" --report-dir "$out/dynamic" \
  "$out/specs/dynamic.json" >"$out/dynamic.out" 2>&1 || { cat "$out/dynamic.out" >&2; exit 1; }
"$kvmark" plot "$out/dynamic" --out "$out/figures/dynamic" >/dev/null \
  || { echo "kvmark plot $out/dynamic failed" >&2; exit 1; }
"$kvmark" gen "$out/specs/dynamic.json" -o "$data/dynamic.ops" >/dev/null 2>"$data/err" \
  || { cat "$data/err" >&2; exit 1; }
awk '/^# phase / { phase = $3; next } { n[phase " " $1]++ } END { for (k in n) print k, n[k] }' "$data/dynamic.ops" \
  | sort >"$out/dynamic-log.txt"

python3 - "$out" "$runs" "$workloads" <<'PY'
import glob, json, os, statistics, sys
out, runs, workloads = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
specs = {w: json.load(open(f"{out}/specs/{w}.json")) for w in workloads}
ops = {w: sum(v["op_count"] for g in s["sections"][0]["groups"] for v in g.values() if isinstance(v, dict))
       for w, s in specs.items()}

def runs_of(tool, w):
    """Per run: wall, CPU (user + system) and the peak RSS (MiB) over its steps."""
    path = f"{out}/timings/{tool}-{w}"
    if not os.path.exists(path):
        return None  # not run, or stopped at the limit
    by_round = {}
    for line in open(path):
        r, wall, user, system, rss = line.split()
        t = by_round.setdefault(r, [0.0, 0.0, 0])
        t[0] += float(wall); t[1] += float(user) + float(system); t[2] = max(t[2], int(rss))
    return [(wall, cpu, rss / 1024) for wall, cpu, rss in by_round.values()]

tools = [t for t in ("kvmark", "tectonic", "ycsb", "kvbench") if glob.glob(f"{out}/timings/{t}-*")]
for title, names in [] if not runs else [("Figure 3: YCSB workloads", [w for w in workloads if w.startswith("ycsb")]),
                     ("Figure 4: KVBench workloads", [w for w in workloads if w.startswith("kvbench")])]:
    print(f"{title}: per tool, medians of {runs} runs: wall s, ops/s, CPU s, peak RSS MiB")
    print(f"  {'workload':<12}{'ops':>9}" + "".join(f"{t:>42}" for t in tools))
    for w in names:
        cells = []
        for t in tools:
            r = runs_of(t, w)
            if not r:
                stopped = f"{out}/timings/{t}-{w}.timeout"
                cells.append(f"{'>' + open(stopped).read().strip() + ' s':>9}   {'(stopped)':>29}" if os.path.exists(stopped)
                             else f"{'-':>42}")
                continue
            wall, cpu, rss = (statistics.median(x[i] for x in r) for i in range(3))
            cells.append(f"{wall:9.2f} s {ops[w] / wall:11.0f} {cpu:9.2f} s {rss:7.1f} M")
        print(f"  {w:<12}{ops[w]:>9}" + "".join(cells))
    print("  lines written (first run): " + "; ".join(
        f"{w} " + " ".join(f"{t} {open(f'{out}/timings/{t}-{w}.lines').read().strip()}"
                          for t in tools if os.path.exists(f"{out}/timings/{t}-{w}.lines"))
        for w in names))
    for t in tools[1:]:
        pairs = [(runs_of("kvmark", w), runs_of(t, w)) for w in names]
        pairs = [(a, b) for a, b in pairs if a and b]
        if pairs:
            speed = [statistics.median(x[0] for x in b) / statistics.median(x[0] for x in a) for a, b in pairs]
            mem = [statistics.median(x[2] for x in b) / statistics.median(x[2] for x in a) for a, b in pairs]
            print(f"  {t} / kvmark over {len(pairs)} workloads: wall time {min(speed):.1f}x to {max(speed):.1f}x, "
                  f"peak RSS {min(mem):.1f}x to {max(mem):.1f}x")

print("Figure 2, dynamic workload on RocksDB: per phase, operations by kind and ops/s")
[path] = glob.glob(f"{out}/dynamic/**/results.json", recursive=True)
for p in json.load(open(path))["points"]:
    for ph in p["phases"]:
        kinds = ", ".join(f"{o['op']} {o['count']}" for o in ph["ops"])
        print(f"  {ph['name']:<12} {ph['ops_per_s']['median']:10.0f} ops/s: {kinds}")
print("  the generated log's lines per phase and kind:")
for line in open(f"{out}/dynamic-log.txt"):
    print("   ", line.strip())
PY
