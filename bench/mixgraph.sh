#!/usr/bin/env bash
# kvmark's MixGraph spec features side by side with db_bench's own mixgraph (issue 33):
# the same parameters (PRESET: pr5953, specs/mixgraph-pr5953.json, RocksDB PR 5953's
# example with its in-range power law; or example, specs/mixgraph-example.json, the
# all-dist example of db_bench's documentation, keys uniform inside their range) on
# KEYS keys of 48 bytes and QUERIES queries. db_bench's queries come from its query
# trace (-trace_file; Get, Put and Seek records with their keys and values), kvmark's
# from `kvmark gen` of the spec. Compared: the operation mix, the value-size histogram
# of puts and the key-range access histogram (30 ranges), each as the total variation
# distance between the two (half the sum of the bins' differences in share: no set of
# bins differs by more than it). Then the rate over time: a sine wave of
# 8000·sin(2π·t/SECS) + 20000 ops/s, recomputed every 5 s, run for SECS seconds by
# db_bench (-sine_mix_rate) and by kvmark (the spec's `rate: {"sine": ...}`, on the
# skiplist, timeline every second), compared per 5-second interval from the third on
# (db_bench runs its first interval unpaced, and its rate limiter spends the credit
# left from it in the second): each tool against the wave (kvmark's must be within 2%),
# and the two against each other. The wave is faster than the published
# ones (4500 and 50000 ops/s, periods of a day and ten minutes) to show a whole
# period in a minute, and high enough for db_bench 7.8: its rate limiter asserts that
# 100 puts fit in 100 ms of the put rate, so puts must come at 1000/s or more (at
# 4500 ops/s, 14% puts, the published all-dist wave aborts db_bench).
#
# usage: bench/mixgraph.sh [KEYS] [QUERIES] [SECS] [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${1:-1000000}; queries=${2:-1000000}; secs=${3:-60}; preset=${4:-pr5953}
[[ $keys =~ ^[0-9]+$ && $keys -ge 30 ]] || { echo "bench/mixgraph.sh: KEYS must be a whole number of at least 30 (one per key range), not '$keys'" >&2; exit 2; }
[[ $queries =~ ^[0-9]+$ && $queries -ge 100 ]] || { echo "bench/mixgraph.sh: QUERIES must be a whole number of at least 100, not '$queries'" >&2; exit 2; }
[[ $secs =~ ^[0-9]+$ && $secs -ge 15 ]] || { echo "bench/mixgraph.sh: SECS must be a whole number of at least 15 (two intervals of 5 s are not compared), not '$secs'" >&2; exit 2; }
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
command -v db_bench >/dev/null || { echo "db_bench is missing: scripts/setup test installs rocksdb-tools" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/kvmark-mixgraph.XXXXXX")
trap 'rm -rf "$dir"' EXIT

case $preset in
  # The published parameters, as each preset's spec has them.
  pr5953) in_range=(-key_dist_a=0.002312 -key_dist_b=0.3467) ;;
  example) in_range=() ;;
  *) echo "bench/mixgraph.sh: PRESET must be pr5953 or example, not '$preset'" >&2; exit 2 ;;
esac
model=("${in_range[@]+"${in_range[@]}"}" -keyrange_num=30
  -keyrange_dist_a=14.18 -keyrange_dist_b=-2.917 -keyrange_dist_c=0.0164 -keyrange_dist_d=-0.08082
  -value_k=0.2615 -value_sigma=25.45 -iter_k=2.517 -iter_sigma=14.236
  -mix_get_ratio=0.85 -mix_put_ratio=0.14 -mix_seek_ratio=0.01)
wave_a=8000; wave_d=20000; wave_b=$(python3 -c "import math; print(2 * math.pi / $secs)")

echo "db_bench $(db_bench --version 2>&1 | head -1 | sed 's/^db_bench version //'), preset $preset, $keys keys, $queries queries"
db_bench -benchmarks=fillseq -num="$keys" -key_size=48 -value_size=100 -db="$dir/db" >"$dir/fill.out" 2>&1 \
  || { cat "$dir/fill.out" >&2; exit 1; }
db_bench -benchmarks=mixgraph -use_existing_db=1 -num="$keys" -reads="$queries" -key_size=48 -db="$dir/db" \
  "${model[@]}" -trace_file="$dir/dist.trace" >"$dir/dist.out" 2>&1 || { cat "$dir/dist.out" >&2; exit 1; }
db_bench -benchmarks=mixgraph -use_existing_db=1 -num="$keys" -reads=1000000000 -duration="$secs" -key_size=48 \
  -db="$dir/db" "${model[@]}" -sine_mix_rate=true -sine_a="$wave_a" -sine_b="$wave_b" -sine_c=0 -sine_d="$wave_d" \
  -sine_mix_rate_interval_milliseconds=5000 -trace_file="$dir/rate.trace" >"$dir/rate.out" 2>&1 \
  || { cat "$dir/rate.out" >&2; exit 1; }

# The spec at this size, and the same spec paced by the wave for the rate.
python3 - "specs/mixgraph-$preset.json" "$keys" "$queries" "$secs" "$wave_a" "$wave_b" "$wave_d" "$dir" <<'PY'
import copy, json, sys
src, keys, queries, secs, a, b, d, out = sys.argv[1:]
spec = json.load(open(src))
groups = spec["sections"][0]["groups"]
groups[0]["inserts"]["op_count"] = int(keys)
mix = groups[1]
for op, share in [("point_queries", 0.85), ("updates", 0.14), ("range_queries", 0.01)]:
    mix[op]["op_count"] = round(int(queries) * share)
del mix["rate"]
json.dump(spec, open(out + "/dist.json", "w"))
paced = copy.deepcopy(spec)
paced["sections"][0]["groups"][0]["inserts"]["op_count"] = min(int(keys), 100000)
pm = paced["sections"][0]["groups"][1]
pm["rate"] = {"sine": {"a": float(a), "b": float(b), "c": 0, "d": float(d), "interval": 5}}
pm["duration"] = float(secs)
for op, n in [("point_queries", 85), ("updates", 14), ("range_queries", 1)]:
    pm[op]["op_count"] = n
json.dump(paced, open(out + "/rate.json", "w"))
PY
"$kvmark" gen "$dir/dist.json" -o "$dir/dist.ops" 2>"$dir/gen.err" || { cat "$dir/gen.err" >&2; exit 1; }
"$kvmark" --probe none --timeline 1 --report "timeline:$dir/timeline.tsv" "$dir/rate.json" >"$dir/run.out" 2>&1 \
  || { cat "$dir/run.out" >&2; exit 1; }

python3 - "$dir" "$keys" "$secs" "$wave_a" "$wave_b" "$wave_d" <<'PY'
import math, struct, sys
from collections import Counter
d, keys, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
wa, wb, wd = map(float, sys.argv[4:7])
size = keys // 30
VALUE_BINS = [0, 8, 16, 24, 32, 40, 48, 64, 96, 128, 256, 512, 1025]

def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7F) << s; s += 7
        if c < 0x80:
            return v, i

def lenslice(b, i):
    n, i = varint(b, i)
    return b[i:i + n], i + n

def trace(path):
    """db_bench's query trace: (micros, kind, key id, value length) per query."""
    b = open(path, "rb").read()
    i, out = 0, []
    while i + 13 <= len(b):
        ts, kind, n = struct.unpack_from("<QBI", b, i)
        p = b[i + 13:i + 13 + n]; i += 13 + n
        if kind in (4, 5):  # Get, iterator Seek: payload map, cf id, key
            key, _ = lenslice(p, 12)
            out.append((ts, "get" if kind == 4 else "seek", int.from_bytes(key[:8], "big"), None))
        elif kind == 3:  # Write: payload map, then the write batch
            rep, _ = lenslice(p, 8)
            j = 12
            while j < len(rep):
                tag = rep[j]; j += 1
                if tag != 1:
                    sys.exit(f"{path}: a write batch record of type {tag}; mixgraph writes only puts")
                key, j = lenslice(rep, j)
                val, j = lenslice(rep, j)
                out.append((ts, "put", int.from_bytes(key[:8], "big"), len(val)))
    return out

def unescape(s):
    out, i = bytearray(), 0
    while i < len(s):
        if s[i] == "\\":
            if s[i + 1] == "\\": out.append(92); i += 2
            elif s[i + 1] == "e": i += 2
            else: out.append(int(s[i + 2:i + 4], 16)); i += 4
        else:
            out.append(ord(s[i])); i += 1
    return bytes(out)

def oplog(path):
    """kvmark's operation log: the load's keys in insertion (= key) order, then queries."""
    rank, out, phase = {}, [], None
    for line in open(path, encoding="ascii"):
        if line.startswith("# phase "):
            phase = line.split()[2]; continue
        f = line.rstrip("\n").split(" ")
        if phase == "load":
            rank[f[1]] = len(rank)
        elif f[0] in ("P", "U", "S"):
            kind = {"P": "get", "U": "put", "S": "seek"}[f[0]]
            out.append((0, kind, rank[f[1]], len(unescape(f[2])) if kind == "put" else None))
    return out

def shares(counter, bins):
    total = sum(counter.values()) or 1
    return [counter.get(b, 0) / total for b in bins]

def tv(p, q):
    return sum(abs(x - y) for x, y in zip(p, q)) / 2

def value_bin(n):
    return next(i for i in range(len(VALUE_BINS) - 1) if n < VALUE_BINS[i + 1])

db, kv = trace(d + "/dist.trace"), oplog(d + "/dist.ops")
print(f"queries: db_bench {len(db)}, kvmark {len(kv)}")
rows = []
kinds = ["get", "put", "seek"]
p, q = shares(Counter(k for _, k, _, _ in db), kinds), shares(Counter(k for _, k, _, _ in kv), kinds)
print("operation mix (db_bench / kvmark): " + ", ".join(f"{k} {x:.4f} / {y:.4f}" for k, x, y in zip(kinds, p, q)))
rows.append(("operation mix", tv(p, q)))
vb = list(range(len(VALUE_BINS) - 1))
p = shares(Counter(value_bin(v) for _, k, _, v in db if k == "put"), vb)
q = shares(Counter(value_bin(v) for _, k, _, v in kv if k == "put"), vb)
print("value sizes of puts (db_bench / kvmark):")
for i, x, y in zip(vb, p, q):
    print(f"  [{VALUE_BINS[i]}, {VALUE_BINS[i + 1]}): {x:.4f} / {y:.4f}")
rows.append(("value-size histogram", tv(p, q)))
rb = list(range(30))
p = shares(Counter(key // size for _, _, key, _ in db), rb)
q = shares(Counter(key // size for _, _, key, _ in kv), rb)
print("key-range accesses (db_bench / kvmark), ranges holding 1% or more:")
for i, x, y in zip(rb, p, q):
    if max(x, y) >= 0.01:
        print(f"  range {i:2d}: {x:.4f} / {y:.4f}")
rows.append(("key-range histogram", tv(p, q)))

# Rate: queries per 5-second interval, from the second interval on.
rt = trace(d + "/rate.trace")
t0 = rt[0][0]
db_iv = Counter(int((ts - t0) / 5e6) for ts, _, _, _ in rt)
kv_s = {}
for line in open(d + "/timeline.tsv"):
    f = line.rstrip("\n").split("\t")
    if len(f) > 11 and f[5] == "mixgraph" and f[7] == "ops_per_s":
        kv_s[float(f[6])] = float(f[8]) * float(f[11])
kv_iv = Counter()
for end, n in kv_s.items():
    kv_iv[int((end - 0.5) / 5)] += n
print("rate over time, ops/s per 5 s interval (target / db_bench / kvmark):")
worst = {"kvmark": 0.0, "db_bench": 0.0, "between": 0.0}
for k in range(secs // 5):
    want = wa * math.sin(wb * 5 * k) + wd
    x, y = db_iv.get(k, 0) / 5, kv_iv.get(k, 0) / 5
    note = ""
    if k >= 2:
        for who, v in [("kvmark", abs(y - want) / want), ("db_bench", abs(x - want) / want),
                       ("between", abs(x - y) / max(x, 1))]:
            worst[who] = max(worst[who], v)
    else:
        note = "  (not compared: db_bench runs it unpaced)" if k == 0 else "  (not compared: db_bench spends the unpaced interval's credit)"
    print(f"  {5 * k:3d}-{5 * k + 5:3d} s: {want:8.1f} / {x:8.1f} / {y:8.1f}{note}")
print("side by side (within 2% passes):")
for name, v in rows:
    print(f"  {name}: total variation distance {v * 100:.2f} (% of queries), {'pass' if v <= 0.02 else 'FAIL'}")
w = worst["kvmark"]
print(f"  rate over time, kvmark against the wave: largest difference {w * 100:.2f} (% of the wave), {'pass' if w <= 0.02 else 'FAIL'}")
print(f"  rate over time, db_bench against the wave: largest difference {worst['db_bench'] * 100:.2f} (% of the wave)")
print(f"  rate over time, kvmark against db_bench: largest difference {worst['between'] * 100:.2f} (% of db_bench's rate)")
PY
