#!/usr/bin/env python3
"""Bad inputs through the real binary (issue 21): generates malformed and hostile
inputs for every parser kvmark has (specs, config files, operation logs, histogram
logs, `kvmark merge` segment directories, YCSB property files, command-line flags,
the server engines' TLS knobs and URL parameters, Lua workloads), runs kvmark on each in a fresh directory with a time limit, and
counts what must never happen: a panic (exit 101 or "panicked" on stderr), a hang
(the time limit), a death by signal, an exit 0 on an input that is invalid, and a
refusal without a message on stderr. Every input here is invalid by construction.

    python3 bench/bad-inputs.py [--kvmark target/release/kvmark] [--jobs 2] [-v]

Prints one row per parser and the total; with -v, each input that failed a goal
with its command and the end of its stderr. Exits 1 when any goal count is not 0.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A run that gets past parsing does little: a small budget on an in-memory engine.
RUN = ["--backend", "skiplist", "--ops", "50"]


class Case:
    """One input: directories copied and files written (None: removed) into a fresh
    directory, and kvmark's arguments."""

    def __init__(self, parser, name, args, files=None, copy_dirs=None):
        self.parser = parser
        self.name = name
        self.args = args
        self.files = files or {}
        self.copy_dirs = copy_dirs or {}


CASES = []


def case(parser, name, args, files=None, copy_dirs=None):
    CASES.append(Case(parser, name, args, files, copy_dirs))


# ---------------------------------------------------------------------------
# Specs

BASE_SPEC = {
    "name": "bad",
    "sections": [
        {
            "key": {"segmented": {"segments": ["user", {"uniform": {"len": 8, "character_set": "numeric"}}]}},
            "val_len": 32,
            "selection": {"uniform": {"min": 0, "max": 1}},
            "groups": [
                {"name": "load", "inserts": {"op_count": 100}},
                {
                    "name": "run",
                    "point_queries": {"op_count": 20},
                    "range_queries": {"op_count": 5, "selectivity": 0.01},
                    "updates": {"op_count": 20},
                },
            ],
        }
    ],
}


def spec_case(name, doc):
    text = doc if isinstance(doc, (str, bytes)) else json.dumps(doc)
    case("spec", name, RUN + ["w.json"], {"w.json": text})


def with_path(doc, path, value):
    """A deep copy of `doc` with the element at `path` (keys and indexes) replaced,
    or removed when `value` is REMOVE."""
    doc = json.loads(json.dumps(doc))
    node = doc
    for p in path[:-1]:
        node = node[p]
    if value is REMOVE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


REMOVE = object()


def spec_cases():
    full = json.dumps(BASE_SPEC)
    # Cut short anywhere: never a whole document.
    step = max(1, len(full) // 70)
    for cut in range(0, len(full) - 1, step):
        spec_case(f"truncated at {cut}", full[:cut])
    sec = ["sections", 0]
    g0 = sec + ["groups", 0]
    g1 = sec + ["groups", 1]
    # Counts and lengths that are not whole non-negative numbers.
    for path in [g0 + ["inserts", "op_count"], g1 + ["point_queries", "op_count"], sec + ["val_len"],
                 sec + ["key", "segmented", "segments", 1, "uniform", "len"], g1 + ["updates", "op_count"]]:
        for v in [-1, "x", None, [], {}, 1.5, 1e300, 18446744073709551616, True]:
            if v == 1.5 and path[-1] in ("len", "val_len"):
                continue  # a length drawn as a number is rounded, as Tectonic does
            spec_case(f"{'.'.join(map(str, path))} = {json.dumps(v)}", with_path(BASE_SPEC, path, v))
    # Fractions and distribution parameters out of range.
    for v in [-0.5, 1.5, "x", None, 1e300]:
        spec_case(f"selectivity = {v}", with_path(BASE_SPEC, g1 + ["range_queries", "selectivity"], v))
    for dist, params in [("uniform", {"min": 1, "max": 0}), ("normal", {"mean": 0.5, "std_dev": -1}),
                         ("zipf", {"s": -1}), ("exponential", {"lambda": 0}), ("exponential", {"lambda": -2}),
                         ("beta", {"alpha": 0, "beta": 1}), ("weibull", {"scale": -1, "shape": 1}),
                         ("pareto", {"scale": 0, "shape": 0}), ("nosuch", {}), ("uniform", {"min": "a", "max": 1}),
                         ("zipf", {"s": 1, "bogus": 2}), ("latest", {"s": "high"})]:
        spec_case(f"selection {dist} {params}", with_path(BASE_SPEC, sec + ["selection"], {dist: params}))
    # Fields that do not exist, misspelt and misplaced.
    for path, field in [(sec, "groupz"), (g0, "insert"), ([], "sectons"), (g0 + ["inserts"], "op_cnt"),
                        (g1 + ["point_queries"], "colour")]:
        doc = with_path(BASE_SPEC, path + [field], 1) if path else dict(BASE_SPEC, **{field: 1})
        spec_case(f"unknown field {field}", doc)
    # Required pieces missing or empty.
    spec_case("no sections", {"name": "x"})
    spec_case("empty sections", {"sections": []})
    spec_case("empty groups", with_path(BASE_SPEC, sec + ["groups"], []))
    spec_case("no key", with_path(BASE_SPEC, sec + ["key"], REMOVE))
    spec_case("sections is an object", {"sections": {}})
    spec_case("compression_ratio 0", dict(BASE_SPEC, compression_ratio=0))
    spec_case("compression_ratio 2", dict(BASE_SPEC, compression_ratio=2))
    spec_case("character_set unknown", dict(BASE_SPEC, character_set="klingon"))
    spec_case("scan_length -1", with_path(BASE_SPEC, g1 + ["range_queries"], {"op_count": 5, "scan_length": -1}))
    spec_case("sorted k -1", with_path(BASE_SPEC, g0 + ["sorted"], {"k": -1, "l": -1}))
    spec_case("rate -5", with_path(BASE_SPEC, g1 + ["rate"], -5))
    spec_case("rate string", with_path(BASE_SPEC, g1 + ["rate"], "fast"))
    spec_case("duration -1", with_path(BASE_SPEC, g1 + ["duration"], -1))
    # Not JSON, or not a spec.
    for name, text in [("empty file", ""), ("whitespace", "  \n\t"), ("a number", "42"), ("a string", '"spec"'),
                       ("an array", "[]"), ("null", "null"), ("nul bytes", "\0\0\0"),
                       ("binary", bytes(range(256))), ("BOM then garbage", "\ufeff{x}"),
                       ("trailing comma", full[:-2] + ",]}"), ("two documents", full + full),
                       ("deep nesting", "[" * 100000 + "]" * 100000), ("comment", "// spec\n" + full),
                       ("single quotes", full.replace('"', "'")), ("invalid UTF-8", b'{"name": "\xff\xfe"}')]:
        spec_case(name, text)


# ---------------------------------------------------------------------------
# Config files

NUMERIC_KEYS = ["ops", "secs", "threads", "connections", "batch", "repeat", "users", "items", "seed",
                "seed_threads", "timeline", "rate", "warmup", "slo_secs", "epochs", "extend_ops", "extend_bytes",
                "scale", "max_value_bytes", "segment_count"]
SWITCHES = ["seed_once", "keep_data", "settle", "auto_plot", "ivs_verify", "verify", "pin"]


def config_case(name, text):
    """`kvmark --config c.cnf` alone: the file also names the engine, budget and
    workload (those the case does not set itself), so no flag replaces its lines."""
    null = os.path.join(ROOT, "workloads", "null.lua")
    if isinstance(text, bytes):
        case("config", name, ["--config", "c.cnf"], {"c.cnf": text})
        return
    base = {"backend": "skiplist", "ops": "50", "workload": null}
    if "secs" in text:
        del base["ops"]
    extra = "".join(f"{k} = {v}\n" for k, v in base.items() if f"{k} =" not in text and f"{k}=" not in text)
    if "[bench]" in text:
        text = text.replace("[bench]\n", "[bench]\n" + extra, 1)
    else:
        text = text + "\n[bench]\n" + extra
    case("config", name, ["--config", "c.cnf"], {"c.cnf": text})


def config_cases():
    for key in NUMERIC_KEYS:
        for v in ["abc", "-5", "1e400"]:
            config_case(f"{key} = {v}", f"[bench]\n{key} = {v}\n")
    for key in SWITCHES:
        config_case(f"{key} = maybe", f"[bench]\n{key} = maybe\n")
    for name, text in [
        ("unknown key", "[bench]\nthreadz = 2\n"),
        ("key twice", "[bench]\nthreads = 1\nthreads = 2\n"),
        ("empty value", "[bench]\nthreads =\n"),
        ("empty list item", "[bench]\nthreads = 1,,2\n"),
        ("no equals", "[bench]\nthreads 2\n"),
        ("no key", "[bench]\n= 2\n"),
        ("outside a section", "threads = 2\n"),
        ("unknown section", "[nosuchengine]\na = 1\n"),
        ("unclosed header", "[bench\nthreads = 1\n"),
        ("empty header", "[]\n"),
        ("nested brackets", "[[bench]]\n"),
        ("config in a config", "[bench]\nconfig = other.cnf\n"),
        ("save_config in a config", "[bench]\nsave_config = x.cnf\n"),
        ("engine_opt in a config", "[bench]\nengine_opt = sim.x=1\n"),
        ("engine option unknown", "[sim]\nbogus = 1\n"),
        ("engine option twice", "[sim]\nservice = 1us\nservice = 2us\n"),
        ("engine size with B", "[skiplist]\nx = 64MB\n"),
        ("engine size too large", "[skiplist]\nx = 99999999999999999999T\n"),
        ("sim service not a duration", "[sim]\nservice = soon\n"),
        ("backend unknown", "[bench]\nbackend = nosuch\n"),
        ("report unknown sink", "[bench]\nreport = nosuch\n"),
        ("arrival unknown", "[bench]\nrate = 100\narrival = sometimes\n"),
        ("slo malformed", "[bench]\nslo = p99<\n"),
        ("segment malformed", "[bench]\nsegment = 3/2\n"),
        ("start_at malformed", "[bench]\nstart_at = yesterday\n"),
        ("probe unknown", "[bench]\nprobe = nosuch\n"),
        ("workload empty", "[bench]\nworkload =\n"),
        ("workload missing file", "[bench]\nworkload = nosuch.lua\n"),
        ("binary", "\0\1\2\3[bench]\n"),
        ("invalid UTF-8", b"[bench]\nthreads = \xff\n"),
        ("threads too many", "[bench]\nthreads = 5000\n"),
        ("threads zero", "[bench]\nthreads = 0\n"),
        ("secs past a year", "[bench]\nsecs = 1e300\n"),
        ("secs NaN", "[bench]\nsecs = NaN\n"),
    ]:
        config_case(name, text)


# ---------------------------------------------------------------------------
# Operation logs

def oplog_case(name, text):
    if isinstance(text, str):
        text = text.encode()
    case("oplog", name, RUN + ["w.ops"], {"w.ops": b"I k1 v1\nP k1\n" + text})


def oplog_cases():
    for b in list(range(0, 32)) + [0x7F]:
        if b in (0x0A, 0x0D):
            continue  # a line end (and a CR before one) ends the line
        oplog_case(f"raw control byte 0x{b:02x} in a key", b"P k" + bytes([b]) + b"x\n")
    for name, line in [
        ("unknown tag X", "X k\n"), ("lower-case tag", "p k\n"), ("tag only I", "I\n"), ("tag only P", "P\n"),
        ("insert without value", "I k\n"), ("too many fields", "P a b\n"), ("double space", "I k  v\n"),
        ("trailing space", "P k \n"), ("leading space", " P k\n"), ("bad escape \\q", "P a\\q\n"),
        ("lone backslash", "P a\\\n"), ("truncated \\x", "P a\\x4\n"), ("\\x non-hex", "P a\\xzz\n"),
        ("\\x+f", "P a\\x+f\n"), ("\\x-1", "P a\\x-1\n"), ("\\x with space", "P a\\x 1\n"),
        ("empty field then text", "P \\ek\n"), ("row count past u64", "S a 99999999999999999999999\n"),
        ("range delete by count", "R a 10\n"), ("scan without end", "S a\n"), ("range delete without end", "R a\n"),
        ("scan too many fields", "S a b c\n"), ("tab separated", "I\tk\tv\n"), ("unicode tag", "\u00c9 k\n"),
        ("comma separated", "I,k,v\n"), ("JSON line", '{"op": "I"}\n'), ("tag word", "INSERT k v\n"),
        ("Tectonic header", "OPERATIONS\n"), ("bad escape at end of long value", "I k " + "v" * 100000 + "\\\n"),
        ("binary garbage", bytes(range(128, 256)) + b"\n"), ("NUL line", b"\0\n"),
        ("upper-case hex escape X", "P a\\X41\n"), ("escape \\n", "P a\\n\n"), ("escape \\E", "P \\E\n"),
    ]:
        oplog_case(name, line)
    case("oplog", "no operations", RUN + ["w.ops"], {"w.ops": "# only a comment\n\n"})
    case("oplog", "empty log", RUN + ["w.ops"], {"w.ops": ""})
    case("oplog", "phase markers only", RUN + ["w.ops"], {"w.ops": "# phase a\n# phase b\n"})
    case("oplog", "replay missing file", ["replay", "nosuch.ops"])
    case("oplog", "replay a directory", ["replay", "."])
    for tag in "ABCEFGHJKLNOQTVXYZ":
        oplog_case(f"unknown tag {tag}", f"{tag} k v\n")


# ---------------------------------------------------------------------------
# Histogram logs and merge inputs: a real segment's report directory, damaged.

def make_segments(kvmark, work):
    """Runs the two segments of one real scaled-out run and returns their report
    directories."""
    dirs = []
    for i in range(2):
        parent = os.path.join(work, f"segment{i}")
        out = subprocess.run([kvmark, "--backend", "skiplist", "--ops", "300", "--timeline", "0.05", "--segment",
                              f"{i}/2", "--report-dir", parent, os.path.join(ROOT, "workloads", "mixed.lua")],
                             capture_output=True, timeout=120)
        if out.returncode != 0:
            sys.exit(f"cannot make the segments for the merge inputs: {out.stderr.decode(errors='replace')}")
        dirs.append(os.path.join(parent, os.listdir(parent)[0]))
    return dirs


def read(path):
    with open(path, "rb") as f:
        return f.read()


def merge_cases(segs):
    seg = segs[0]
    results = read(os.path.join(seg, "results.json"))
    hdr = os.path.join(seg, "hdr")
    hlog_name = sorted(os.listdir(hdr))[0]
    hlog = read(os.path.join(hdr, hlog_name))
    timeline = read(os.path.join(seg, "timeline.tsv"))
    doc = json.loads(results)

    def merge_case(parser, name, files):
        """A merge of the two segments with `files` (paths under segment 0) replaced."""
        case(parser, name, ["merge", "s0", "s1", "--out", "out"], {f"s0/{k}": v for k, v in files.items()},
             {"s0": segs[0], "s1": segs[1]})

    # Histogram logs: cut short inside the data, lines broken, histograms damaged.
    lines = hlog.split(b"\n")
    data = [i for i, line in enumerate(lines) if line and not line.startswith(b"#") and not line.startswith(b'"')]
    first = data[0]
    path = f"hdr/{hlog_name}"
    for i, cut in enumerate(range(10, len(lines[first]) - 1, max(1, len(lines[first]) // 12))):
        broken = lines[:first] + [lines[first][:cut]] + lines[first + 1:]
        merge_case("hlog", f"interval line cut at {cut}", {path: b"\n".join(broken)})
    for name, repl in [
        ("start not a number", lambda f: [b"Tag=" + f[0].split(b"=", 1)[1] if f[0].startswith(b"Tag=") else f[0], b"x"] + f[2:]),
        ("length not a number", lambda f: f[:2] + [b"?"] + f[3:]),
        ("histogram not base64", lambda f: f[:-1] + [b"!!!not base64!!!"]),
        ("histogram base64 of junk", lambda f: f[:-1] + [b"SGVsbG8gd29ybGQ="]),
        ("histogram empty", lambda f: f[:-1] + [b""]),
        ("histogram truncated", lambda f: f[:-1] + [f[-1][: len(f[-1]) // 2]]),
        ("fields missing", lambda f: f[:2]),
        ("tag without interval", lambda f: [f[0]]),
        ("histogram of another encoding", lambda f: f[:-1] + [b"HISTFAAAACl42pNpmSzMwMDAyMDAwMzAwMDMxMDAzMDAxMTAwMDMwMDAyMzCwMAAAD7qBA0="]),
    ]:
        fields = lines[first].split(b",")
        broken = lines[:first] + [b",".join(repl(fields))] + lines[first + 1:]
        merge_case("hlog", name, {path: b"\n".join(broken)})
    for name, text in [("binary", bytes(range(256)) * 4), ("only garbage", b"garbage\n" * 5),
                       ("NUL bytes", b"\0" * 1000), ("invalid UTF-8", b"\xff\xfe\n" * 10)]:
        merge_case("hlog", name, {path: text})
    # A damaged histogram inside an otherwise whole log, at every data line.
    for k, i in enumerate(data[:30]):
        fields = lines[i].split(b",")
        broken = lines[:i] + [b",".join(fields[:-1] + [b"AAAA" + fields[-1][4:]])] + lines[i + 1:]
        merge_case("hlog", f"damaged histogram on line {i + 1}", {path: b"\n".join(broken)})

    # results.json: cut short, wrong types, fields missing.
    for cut in range(1, len(results) - 2, max(1, len(results) // 25)):
        merge_case("merge", f"results.json cut at {cut}", {"results.json": results[:cut]})

    def json_case(name, changed):
        merge_case("merge", name, {"results.json": json.dumps(changed).encode()})

    def set_at(path, value):
        return with_path(doc, path, value)

    for path in [["run", "scale", "segment"], ["run", "scale", "segments"]]:
        for v in [-1, "x", None, 1.5, 2 ** 70, REMOVE]:
            json_case(f"{'.'.join(path)} = {'removed' if v is REMOVE else json.dumps(v)}", set_at(path, v))
    json_case("scale removed", set_at(["run", "scale"], REMOVE))
    json_case("scale null", set_at(["run", "scale"], None))
    json_case("segments 3 with two given", set_at(["run", "scale", "segments"], 3))
    json_case("segment 5 of 2", set_at(["run", "scale", "segment"], 5))
    json_case("segment 1 twice", set_at(["run", "scale", "segment"], 1))
    json_case("another seed", set_at(["run", "seed"], 999))
    json_case("another thread count", set_at(["run", "threads"], [7]))
    json_case("a point fewer", set_at(["points"], []))
    json_case("warmup_s -1", set_at(["run", "warmup_s"], -1))
    json_case("warmup_s 1e300", set_at(["run", "warmup_s"], 1e300))
    json_case("op count past the log", set_at(["points", 0, "phases", 0, "ops", 0, "count"], 2 ** 64 - 1))
    json_case("unknown operation", set_at(["points", 0, "phases", 0, "ops", 0, "op"], "teleport"))
    json_case("points not a list", set_at(["points"], {}))
    json_case("points of strings", set_at(["points"], ["a", "b"]))
    json_case("point null", set_at(["points", 0], None))
    json_case("phases not a list", set_at(["points", 0, "phases"], 7))
    json_case("repeats not a list", set_at(["points", 0, "repeats"], "x"))
    json_case("run not an object", set_at(["run"], []))
    json_case("top level an empty object", {})
    for name, text in [("results.json empty", b""), ("results.json binary", bytes(range(256))),
                       ("results.json a number", b"7"), ("results.json invalid UTF-8", b'{"run": "\xff"}')]:
        merge_case("merge", name, {"results.json": text})
    # Timelines.
    tl = timeline.split(b"\n")
    merge_case("merge", "timeline without header", {"timeline.tsv": b"\n".join(tl[1:])})
    merge_case("merge", "timeline column missing", {"timeline.tsv": tl[0].replace(b"unix_s", b"unix") + b"\n" + b"\n".join(tl[1:])})
    merge_case("merge", "timeline row cut short", {"timeline.tsv": b"\n".join(tl[:2] + [tl[2][:5]] + tl[3:])})
    merge_case("merge", "timeline value not a number", {"timeline.tsv": b"\n".join(tl[:2] + [b"\t".join(tl[2].split(b"\t")[:-1] + [b"x"])] + tl[3:])})
    merge_case("merge", "timeline binary", {"timeline.tsv": bytes(range(256))})
    # Directories that do not belong together, or are not report directories.
    case("merge", "two copies of segment 0", ["merge", "a", "b", "--out", "out"], {}, {"a": seg, "b": seg})
    case("merge", "segment 1 missing", ["merge", "a", "--out", "out"], {}, {"a": seg})
    case("merge", "not a directory", ["merge", "nosuch", "--out", "out"])
    case("merge", "an empty directory", ["merge", "e", "--out", "out"], {"e/.keep": ""})
    case("merge", "out exists and is not empty", ["merge", "a", "b", "--out", "a"], {}, {"a": segs[0], "b": segs[1]})
    case("merge", "no directories", ["merge", "--out", "out"])
    case("merge", "hdr logs missing", ["merge", "a", "b", "--out", "out"], {"a/hdr": None},
         {"a": segs[0], "b": segs[1]})


# ---------------------------------------------------------------------------
# YCSB property files

YCSB_BASE = "recordcount=100\noperationcount=50\nreadproportion=0.5\nupdateproportion=0.5\n"


def ycsb_case(name, text):
    case("ycsb", name, ["--backend", "skiplist", "-P", "w.properties"], {"w.properties": YCSB_BASE + text})


def ycsb_cases():
    counts = ["recordcount", "operationcount", "insertstart", "insertcount", "fieldcount", "fieldlength",
              "minfieldlength", "minscanlength", "maxscanlength", "zeropadding", "threadcount", "extendfieldlength"]
    numbers = ["readproportion", "updateproportion", "insertproportion", "scanproportion",
               "readmodifywriteproportion", "extendproportion", "hotspotdatafraction", "hotspotopnfraction",
               "exponential.percentile", "exponential.frac", "target", "maxexecutiontime"]
    for key in counts:
        for v in ["abc", "-1", "1.5", "99999999999999999999"]:
            ycsb_case(f"{key}={v}", f"{key}={v}\n")
    # Each read only under its distribution (YCSB ignores the others, and so does kvmark).
    needs = {"hotspot": "requestdistribution=hotspot\n", "exponential": "requestdistribution=exponential\n"}
    for key in numbers:
        for v in ["abc", "-1", "NaN", "inf"]:
            pre = next((t for d, t in needs.items() if key.startswith(d)), "")
            ycsb_case(f"{key}={v}", f"{pre}{key}={v}\n")
    for name, text in [
        ("recordcount=0", "recordcount=0\n"),
        ("insertcount past recordcount", "insertstart=50\ninsertcount=100\n"),
        ("insertstart past recordcount", "insertstart=1000\n"),
        ("insertstart near u64 max", "insertstart=18446744073709551615\ninsertcount=2\n"),
        ("insertcount near u64 max", "insertstart=5\ninsertcount=18446744073709551615\n"),
        ("insertcount=0", "insertcount=0\n"),
        ("every proportion 0", "readproportion=0\nupdateproportion=0\n"),
        ("requestdistribution unknown", "requestdistribution=zipf\n"),
        ("hotspot fraction above 1", "requestdistribution=hotspot\nhotspotdatafraction=1.5\n"),
        ("hotspot opn above 1", "requestdistribution=hotspot\nhotspotopnfraction=2\n"),
        ("exponential percentile 0", "requestdistribution=exponential\nexponential.percentile=0\n"),
        ("exponential percentile 100", "requestdistribution=exponential\nexponential.percentile=100\n"),
        ("exponential frac 0", "requestdistribution=exponential\nexponential.frac=0\n"),
        ("fieldlengthdistribution unknown", "fieldlengthdistribution=histogram\n"),
        ("uniform field lengths min above max", "fieldlengthdistribution=uniform\nminfieldlength=50\nfieldlength=10\n"),
        ("zipfian field lengths min 0", "fieldlengthdistribution=zipfian\nminfieldlength=0\n"),
        ("scanlengthdistribution constant", "scanlengthdistribution=constant\n"),
        ("scanlengthdistribution unknown", "scanlengthdistribution=normal\n"),
        ("scan lengths min above max", "minscanlength=10\nmaxscanlength=5\n"),
        ("insertorder unknown", "insertorder=random\n"),
        ("workload class unknown", "workload=site.ycsb.workloads.TimeSeriesWorkload\n"),
        ("maxexecutiontime past a year", "operationcount=0\nmaxexecutiontime=1e300\n"),
        ("zeropadding huge", "zeropadding=99999999999\n"),
        ("fieldlength huge", "fieldlength=99999999999999\n"),
        ("fieldcount huge", "fieldcount=99999999999999\n"),
        ("latest over a huge recordcount", "recordcount=18446744073709551615\nrequestdistribution=latest\n"),
        ("zipfian field lengths over a huge range", "fieldlengthdistribution=zipfian\nfieldlength=18446744073709551615\n"),
        ("threadcount 5000", "threadcount=5000\n"),
        ("binary value", "readproportion=\0\1\2\xff\n"),
    ]:
        ycsb_case(name, text)
    case("ycsb", "-P missing file", ["--backend", "skiplist", "-P", "nosuch"])
    case("ycsb", "-p without =", ["--backend", "skiplist", "-P", "w", "-p", "recordcount"], {"w": YCSB_BASE})
    case("ycsb", "-p empty name", ["--backend", "skiplist", "-P", "w", "-p", "=5"], {"w": YCSB_BASE})
    case("ycsb", "-p bad value", ["--backend", "skiplist", "-P", "w", "-p", "recordcount=x"], {"w": YCSB_BASE})
    case("ycsb", "-target junk", ["--backend", "skiplist", "-P", "w", "-target", "fast"], {"w": YCSB_BASE})
    case("ycsb", "-threads junk", ["--backend", "skiplist", "-P", "w", "-threads", "many"], {"w": YCSB_BASE})


# ---------------------------------------------------------------------------
# Command-line flags

def cli_cases():
    null = os.path.join(ROOT, "workloads", "null.lua")
    flags = ["--ops", "--secs", "--threads", "--connections", "--batch", "--repeat", "--users", "--items", "--seed",
             "--seed-threads", "--timeline", "--rate", "--warmup", "--slo-secs", "--epochs", "--extend-ops",
             "--extend-bytes", "--scale", "--max-value-bytes", "--segment-count"]
    for flag in flags:
        for v in ["abc", "-5", "1e400", ""]:
            case("cli", f"{flag} {v!r}", ["--backend", "skiplist", f"{flag}={v}", null])
    for name, args in [
        ("unknown flag", ["--nosuch"]), ("unknown subcommand-like word", ["frobnicate"]),
        ("backend unknown", ["--backend", "nosuch"]), ("backend empty", ["--backend", ""]),
        ("engine-opt without =", ["--engine-opt", "sim.service"]), ("engine-opt without engine", ["--engine-opt", "service=1"]),
        ("engine-opt unknown engine", ["--engine-opt", "nosuch.x=1"]), ("engine-opt unknown key", ["--engine-opt", "sim.nosuch=1"]),
        ("engine-opt bad duration", ["--backend", "sim", "--engine-opt", "sim.service=soon"]),
        ("report unknown", ["--report", "nosuch"]), ("report colon without path", ["--report", "tsv:"]),
        ("report-dir is a file", ["--report-dir", null]),
        ("probe unknown", ["--probe", "nosuch"]), ("arrival unknown", ["--rate", "100", "--arrival", "sometimes"]),
        ("slo malformed", ["--slo", "p99"]), ("slo unknown percentile", ["--slo", "p200<1ms"]),
        ("segment 3/3", ["--segment", "3/3"]), ("segment 0/0", ["--segment", "0/0"]), ("segment a/b", ["--segment", "a/b"]),
        ("segment auto without index", ["--segment", "auto"]), ("start-at malformed", ["--start-at", "tomorrow"]),
        ("threads 0", ["--threads", "0"]), ("threads 5000", ["--threads", "5000"]), ("threads empty item", ["--threads", "1,,2"]),
        ("secs NaN", ["--secs", "NaN"]), ("secs past a year", ["--secs", "1e300"]), ("warmup past secs", ["--warmup", "1e301", "--secs", "1e300"]),
        ("ivs-mode unknown", ["--ivs-mode", "nosuch"]), ("extend-dist unknown", ["--extend-dist", "nosuch"]),
        ("config missing", ["--config", "nosuch.cnf"]), ("config a directory", ["--config", "."]),
        ("metrics-listen malformed", ["--metrics-listen", "not an address"]),
        ("data-dir is a file", ["--backend", "sqlite", "--data-dir", null]),
        ("workload missing", ["nosuch.lua"]), ("workload unknown extension", ["w.txt"]),
        ("workload a directory", ["."]),
    ]:
        files = {"w.txt": "hello\n"} if "w.txt" in args else {}
        if not any(a.endswith((".lua", ".txt")) or a in (".",) for a in args):
            args = args + [null]
        if "--backend" not in args:
            args = ["--backend", "skiplist"] + args
        case("cli", name, ["--ops", "50"] + args, files)
    for name, args in [
        ("gen without output", ["gen", "x.json"]), ("gen missing spec", ["gen", "nosuch.json", "-o", "-"]),
        ("gen threads 0", ["gen", os.path.join(ROOT, "specs", "ycsb-a.json"), "-o", "-", "--threads", "0"]),
        ("gen bad segment", ["gen", os.path.join(ROOT, "specs", "ycsb-a.json"), "-o", "-", "--segment", "2/2"]),
        ("gen into a missing directory", ["gen", os.path.join(ROOT, "specs", "ycsb-a.json"), "-o", "/nonexistent/d/x.ops"]),
        ("plot missing dir", ["plot", "nosuch", "-o", "figs"]), ("plot bad format", ["plot", ".", "-o", "figs", "--format", "bmp"]),
        ("plot empty dir", ["plot", "e", "-o", "figs"]),
        ("compare missing files", ["compare", "a.json", "b.json"]), ("compare not JSON", ["compare", "w.txt", "w.txt"]),
        ("completions unknown shell", ["completions", "nosuchshell"]),
    ]:
        files = {"w.txt": "hello\n", "e/.keep": "", "x.json": "{}"}
        case("cli", name, args, files)


# ---------------------------------------------------------------------------
# TLS: the server engines' TLS knobs and the URLs' TLS parameters, refused before any
# connection (no server needed).

def tls_cases():
    null = os.path.join(ROOT, "workloads", "null.lua")
    url_knob = {"etcd": "endpoints"}
    tls_url = {
        "redis": "rediss://127.0.0.1:1", "redis-cluster": "rediss://127.0.0.1:1",
        "postgres": "postgres://kvmark@127.0.0.1:1/kvmark?sslmode=verify-full",
        "mariadb": "mariadb://kvmark@127.0.0.1:1/kvmark?ssl-mode=VERIFY_IDENTITY",
        "myrocks": "mariadb://kvmark@127.0.0.1:1/kvmark?ssl-mode=VERIFY_IDENTITY",
        "mongodb": "mongodb://127.0.0.1:1/?tls=true", "etcd": "https://127.0.0.1:1",
        "memcached": "memcacheds://127.0.0.1:1",
    }
    for engine, url in tls_url.items():
        at = ["--backend", engine, "--engine-opt", f"{engine}.{url_knob.get(engine, 'url')}={url}"]
        for name, opt in [("tls_ca missing", "tls_ca=nosuch.pem"), ("tls_ca not PEM", f"tls_ca={null}"),
                          ("tls_ca a directory", "tls_ca=."), ("tls_cert not PEM", f"tls_cert={null}"),
                          ("tls_key not PEM", f"tls_key={null}")]:
            case("tls", f"{engine} {name}", at + ["--engine-opt", f"{engine}.{opt}", null])
    for name, engine, url in [
        ("postgres sslmode=prefer", "postgres", "postgres://kvmark@127.0.0.1:1/kvmark?sslmode=prefer"),
        ("postgres sslmode unknown", "postgres", "postgres://kvmark@127.0.0.1:1/kvmark?sslmode=sometimes"),
        ("postgres sslmode in a key=value string", "postgres", "host=127.0.0.1 port=1 sslmode=allow"),
        ("mariadb ssl-mode=PREFERRED", "mariadb", "mariadb://kvmark@127.0.0.1:1/kvmark?ssl-mode=PREFERRED"),
        ("mariadb ssl-mode unknown", "mariadb", "mariadb://kvmark@127.0.0.1:1/kvmark?ssl-mode=maybe"),
        ("mariadbs with another ssl-mode", "mariadb", "mariadbs://kvmark@127.0.0.1:1/kvmark?ssl-mode=REQUIRED"),
        ("mariadb the client's own TLS flag", "mariadb", "mariadb://kvmark@127.0.0.1:1/kvmark?require_ssl=true"),
        ("redis #insecure", "redis", "rediss://127.0.0.1:1/#insecure"),
        ("redis-cluster seeds mixing rediss and redis", "redis-cluster", "rediss://127.0.0.1:1,redis://127.0.0.1:2"),
        ("etcd endpoints mixing https and http", "etcd", "https://127.0.0.1:1,http://127.0.0.1:2"),
        ("memcached url of another scheme", "memcached", "redis://127.0.0.1:1"),
        ("memcached url with a path", "memcached", "memcached://127.0.0.1:1/db"),
        ("memcached url with a user", "memcached", "memcached://me@127.0.0.1:1"),
        ("memcached port 0", "memcached", "memcached://127.0.0.1:0"),
        ("memcached port past 65535", "memcached", "memcached://127.0.0.1:70000"),
        ("memcached no host", "memcached", "memcached://:11211"),
    ]:
        knob = url_knob.get(engine, "url")
        case("tls", name, ["--backend", engine, "--engine-opt", f"{engine}.{knob}={url}", null])
    # A TLS knob for a plain memcached:// URL.
    case("tls", "memcached tls_ca for a plain URL",
         ["--backend", "memcached", "--engine-opt", "memcached.url=memcached://127.0.0.1:1",
          "--engine-opt", f"memcached.tls_ca={os.path.join(ROOT, 'README.md')}", null])
    # Workloads that need key order, on an engine that keeps none: refused before any
    # connection, naming the engine and the part of the workload.
    ranged = json.loads(json.dumps(BASE_SPEC))
    case("server", "memcached a spec with range_queries", ["--backend", "memcached", "w.json"],
         {"w.json": json.dumps(ranged)})
    case("server", "memcached a YCSB workload with scans", ["--backend", "memcached", "-P", "w.properties"],
         {"w.properties": YCSB_BASE + "scanproportion=0.1\n"})


# ---------------------------------------------------------------------------
# Lua workloads

LUA_BASE = """local put, get = kv.put, kv.get
return {
  name = "bad",
  load = function(ctx) for i = 1, 10 do put("k" .. i, "v") end end,
  run = function(ctx) get("k1") end,
}
"""


def lua_case(name, text, extra=()):
    case("lua", name, RUN + list(extra) + ["w.lua"], {"w.lua": text})


def lua_cases():
    step = max(1, len(LUA_BASE) // 20)
    for cut in range(5, len(LUA_BASE) - 3, step):
        text = LUA_BASE[:cut]
        if text.rstrip().endswith("}") and text.count("{") == text.count("}"):
            continue
        lua_case(f"cut at {cut}", text)
    run = lambda body: "return { run = function(ctx) " + body + " end }\n"
    for name, body in [
        ("error()", 'error("boom")'), ("error with a table", "error({})"), ("nil call", "nosuch()"),
        ("index nil", "local t = nil; t.x = 1"), ("arith on nil", "local x = nil + 1"),
        ("kv.put no args", "kv.put()"), ("kv.put nil key", 'kv.put(nil, "v")'), ("kv.put table key", 'kv.put({}, "v")'),
        ("kv.get table", "kv.get({})"), ("kv.del function", "kv.del(print)"), ("kv.scan bad limit", 'kv.scan("a", "b", -1)'),
        ("kv.scan bad bounds", "kv.scan({}, {})"), ("kv.nosuch", "kv.nosuch()"),
        ("string.rep huge", 'local s = string.rep("x", 1 << 40)'),
        ("io.open", 'io.open("/etc/passwd")'), ("os.execute", 'os.execute("true")'), ("os.remove", 'os.remove("x")'),
        ("io.popen", 'io.popen("true")'), ("require a C module", 'require("socket")'),
        ("load bytecode", 'load(string.dump(function() end))()'), ("os.exit", "os.exit(0)"), ("os.exit true", "os.exit(true)"),
        ("debug.sethook", "debug.sethook()"), ("coroutine error", 'coroutine.wrap(function() error("x") end)()'),
        ("stack overflow", "local function f() return 1 + f() end f()"),
        ("string.format bad", 'string.format("%d", "x")'), ("pcall then error", 'pcall(error); error("y")'),
    ]:
        lua_case(name, run(body))
    for name, text in [
        ("returns nothing", "local x = 1\n"), ("returns a number", "return 42\n"),
        ("returns a string", 'return "run"\n'), ("run not a function", "return { run = 5 }\n"),
        ("no run", "return { name = 'x' }\n"), ("load not a function", "return { load = 'x', run = function() end }\n"),
        ("top-level error", 'error("at top")\n'), ("top-level os.exit", "os.exit(3)\n"),
        ("syntax error", "return { run = function( }\n"), ("binary file", bytes(range(256))),
        ("bytecode file", b"\x1bLua\x54\x00\x19\x93\r\n\x1a\n"), ("empty file", ""),
        ("load() errors", 'return { run = function() end, load = function() error("in load") end }\n'),
        ("sweep malformed", "return { run = function() end, sweep = 5 }\n"),
        ("name not a string", "return { run = function() end, name = {} }\n"),
        ("memory at top level", 'local s = string.rep("x", 1 << 40)\nreturn { run = function() end }\n'),
        ("invalid UTF-8 source", b"return { run = function() kv.get('\xff') end, name = \xff }\n"),
    ]:
        lua_case(name, text)


# ---------------------------------------------------------------------------
# Running

def run_case(kvmark, work, i, c, timeout):
    d = os.path.join(work, f"case{i}")
    os.makedirs(d)
    for name, src in c.copy_dirs.items():
        shutil.copytree(src, os.path.join(d, name))
    for name, content in c.files.items():
        path = os.path.join(d, name)
        if content is None:  # removed from a copied directory
            shutil.rmtree(path)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())
    try:
        p = subprocess.run([kvmark] + c.args, cwd=d, capture_output=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        code, err = p.returncode, p.stderr.decode(errors="replace")
        if code < 0:
            outcome = "signal"
        elif code == 101 or "panicked" in err:
            outcome = "panic"
        elif code == 0:
            outcome = "exit0"
        elif not err.strip():
            outcome = "silent"
        else:
            outcome = "refused"
    except subprocess.TimeoutExpired as e:
        code, err, outcome = None, (e.stderr or b"").decode(errors="replace"), "hang"
    shutil.rmtree(d, ignore_errors=True)
    return c, outcome, code, err


GOALS = ["panic", "hang", "signal", "exit0", "silent"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kvmark", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")),
                                                     "release", "kvmark"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per input (a hang past it is counted)")
    ap.add_argument("--only", help="run only this parser's inputs")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    kvmark = os.path.abspath(a.kvmark)
    work = tempfile.mkdtemp(prefix="kvmark-bad-inputs-")
    try:
        spec_cases()
        config_cases()
        oplog_cases()
        merge_cases(make_segments(kvmark, work))
        ycsb_cases()
        cli_cases()
        tls_cases()
        lua_cases()
        cases = [c for c in CASES if not a.only or c.parser == a.only]
        with ThreadPoolExecutor(a.jobs) as pool:
            results = list(pool.map(lambda ic: run_case(kvmark, work, ic[0], ic[1], a.timeout), enumerate(cases)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    parsers = list(dict.fromkeys(c.parser for c in cases))
    header = ["parser", "inputs", "refused"] + GOALS
    rows = []
    for p in parsers + ["total"]:
        mine = [r for r in results if p == "total" or r[0].parser == p]
        rows.append([p, len(mine)] + [sum(1 for r in mine if r[1] == k) for k in ["refused"] + GOALS])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |")
    bad = [r for r in results if r[1] in GOALS]
    if a.verbose or bad:
        for c, outcome, code, err in bad:
            tail = "\n    ".join(err.strip().splitlines()[-3:])
            print(f"\n{outcome}: [{c.parser}] {c.name} (exit {code})\n  kvmark {' '.join(c.args)}\n    {tail}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
