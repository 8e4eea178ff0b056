//! Bounded property tests of the parsers that read users' files (issue 21): the JSON
//! spec parser and its generator, the INI config loader, the operation-log reader, the
//! histogram-log reader, YCSB property files and `kvmark merge`'s segment directories.
//! Inputs are random text and random edits of the repository's own files (bundled
//! specs, sample configs, YCSB workloads, fixture logs); each must give a value or an
//! error message, never a panic, and what a parser accepts must hold its invariants.
//! The fuzz targets under fuzz/ search the same parsers without bounds (nightly, run by
//! hand: fuzz/README.md).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use kvmark::cli::{ParseError, parse_config_text};
use kvmark::config::ini;
use kvmark::plot::data::hlog::Hlog;
use kvmark::workload::Workload;
use kvmark::workload::op::Op;
use kvmark::workload::oplog::{Line, write_op};
use kvmark::workload::spec::generator::Generator;
use kvmark::workload::spec::{plan, schema};
use kvmark::workload::ycsb::props::{KNOWN, Properties};
use kvmark::workload::ycsb::{Options, YcsbWorkload};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;

/// Cases per property: together the properties stay well under a minute in release.
const CASES: u32 = 150;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The text of every file in `dir` whose name passes `keep`, sorted by name.
fn seeds(dir: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(common::root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().and_then(|n| n.to_str()).is_some_and(&keep))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no seed files in {dir}");
    paths.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
}

/// One change to a text.
#[derive(Debug, Clone)]
enum Edit {
    /// Remove this many bytes.
    Delete(usize),
    /// Insert text.
    Insert(String),
    /// Replace the next number with this.
    Number(&'static str),
    /// Cut the text here.
    Truncate,
}

/// Values that break parsers that trust numbers: signs, overflow, floats where whole
/// numbers belong, other JSON types.
const HOSTILE_NUMBERS: [&str; 14] = [
    "-1",
    "0",
    "1e308",
    "18446744073709551616",
    "18446744073709551615",
    "NaN",
    "-0.5",
    "4294967296",
    "99999999999999",
    "1e-300",
    "\"x\"",
    "null",
    "[]",
    "{}",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (1usize..40).prop_map(Edit::Delete),
        "[ -~\n]{1,8}".prop_map(Edit::Insert),
        prop::sample::select(&HOSTILE_NUMBERS[..]).prop_map(Edit::Number),
        Just(Edit::Truncate),
    ]
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(seed: &str, edits: &[(Index, Edit)]) -> String {
    let mut s = seed.to_string();
    for (at, e) in edits {
        let pos = floor_boundary(&s, at.index(s.len() + 1));
        match e {
            Edit::Delete(n) => {
                let end = floor_boundary(&s, (pos + n).min(s.len()));
                s.replace_range(pos..end, "");
            }
            Edit::Insert(t) => s.insert_str(pos, t),
            Edit::Number(t) => {
                if let Some(start) = s[pos..].find(|c: char| c.is_ascii_digit()).map(|i| pos + i) {
                    let end = s[start..]
                        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                        .map_or(s.len(), |i| start + i);
                    s.replace_range(start..end, t);
                }
            }
            Edit::Truncate => s.truncate(pos),
        }
    }
    s
}

/// Up to five random edits of one of `seeds`.
fn edited(seeds: Vec<String>) -> impl Strategy<Value = String> {
    let n = seeds.len();
    (0..n, prop::collection::vec((any::<Index>(), edit()), 0..5)).prop_map(move |(i, e)| apply(&seeds[i], &e))
}

/// An operation written as a log line reads back as the same operation.
fn assert_line_round_trips(op: &Op<'_>) {
    let mut buf = Vec::new();
    write_op(&mut buf, op).unwrap();
    if buf.is_empty() {
        return;
    }
    let mut line = Line::default();
    let entry = line
        .parse(&buf[..buf.len() - 1])
        .unwrap_or_else(|e| panic!("{op:?} wrote a line that does not read back: {e}"));
    let back = line.op(entry).unwrap();
    let mut again = Vec::new();
    write_op(&mut again, &back).unwrap();
    assert_eq!(buf, again, "{op:?} read back as {back:?}");
}

/// Parses a spec and, when it builds, runs the first operations of every phase on one
/// and on two threads, each written and read back as a log line.
fn check_spec(text: &str) {
    for strict in [true, false] {
        if let Err(e) = schema::parse_lenient(text, strict) {
            assert!(!e.is_empty());
        }
    }
    let Ok((spec, _)) = schema::parse_lenient(text, false) else {
        return;
    };
    let plan = match plan::build(&spec, "prop") {
        Ok(p) => Arc::new(p),
        Err(e) => {
            assert!(!e.is_empty());
            return;
        }
    };
    for threads in [1, 2] {
        for t in 0..threads {
            let mut g = Generator::new(Arc::clone(&plan), t, threads, 3);
            for phase in 0..g.phase_count() {
                if g.enter(phase).is_err() {
                    break;
                }
                for _ in 0..16 {
                    match g.next_op() {
                        Ok(Some(op)) => assert_line_round_trips(&op),
                        _ => break,
                    }
                }
            }
        }
    }
}

proptest! {
    // A spec builds value pools per generator: fewer cases keep this under seconds.
    #![proptest_config(config(40))]

    #[test]
    fn edited_specs_build_or_say_why(text in edited({
        let mut s = seeds("specs", |n| n.ends_with(".json"));
        s.extend(seeds("bench", |n| n.ends_with(".json")));
        s
    })) {
        check_spec(&text);
    }

}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn any_text_as_a_spec_is_an_error_or_a_plan(text in "\\PC{0,200}") {
        check_spec(&text);
    }

    #[test]
    fn edited_configs_parse_or_name_the_file(text in edited(seeds("samples", |n| n.ends_with(".cnf")))) {
        check_config(&text);
    }

    #[test]
    fn any_text_as_a_config_parses_or_names_the_file(text in "(\\[[a-z]{0,8}\\]\n|[a-z_]{0,12} ?= ?[ -~]{0,12}\n|[;#][ -~]{0,5}\n|\\PC{0,10}\n){0,8}") {
        check_config(&text);
    }

    #[test]
    fn log_lines_round_trip(
        tag in 0usize..9,
        key in prop::collection::vec(any::<u8>(), 0..24),
        val in prop::collection::vec(any::<u8>(), 0..24),
        limit in any::<u64>(),
    ) {
        let (key, val) = (key.as_slice(), val.as_slice());
        let op = match tag {
            0 => Op::Insert { key, val },
            1 => Op::Update { key, val },
            2 => Op::Merge { key, val },
            3 => Op::ReadModifyWrite { key, val },
            4 => Op::Get { key },
            5 => Op::Delete { key },
            6 => Op::Scan { lo: key, hi: Some(val), limit: 0 },
            7 => Op::Scan { lo: key, hi: None, limit },
            _ => Op::DeleteRange { lo: key, hi: val },
        };
        let mut buf = Vec::new();
        write_op(&mut buf, &op).unwrap();
        let mut line = Line::default();
        let entry = line.parse(&buf[..buf.len() - 1]).unwrap();
        prop_assert_eq!(line.op(entry), Some(op));
    }

    #[test]
    fn any_bytes_as_a_log_line_read_or_say_why(
        bytes in prop::collection::vec(
            // Mostly the bytes the format gives meaning to, so lines get past the tag.
            prop_oneof![3 => prop::sample::select(b" \\xeIUMWPDSR#0123456789af".to_vec()), 1 => any::<u8>()],
            0..40,
        ),
    ) {
        let mut line = Line::default();
        match line.parse(&bytes) {
            Ok(entry) => {
                if let Some(op) = line.op(entry) {
                    assert_line_round_trips(&op);
                }
            }
            Err(e) => prop_assert!(!e.is_empty()),
        }
    }

    #[test]
    fn edited_ycsb_files_open_or_name_the_property(text in edited(seeds("workloads", |n| n.starts_with("workload")))) {
        check_ycsb(&text);
    }

    #[test]
    fn hostile_ycsb_properties_open_or_name_the_property(
        props in prop::collection::vec((prop::sample::select(&KNOWN[..]), prop_oneof![
            prop::sample::select(&HOSTILE_NUMBERS[..]).prop_map(str::to_string),
            prop::sample::select(&["uniform", "zipfian", "latest", "hotspot", "sequential", "exponential", "constant", "ordered", "hashed", "true"][..]).prop_map(str::to_string),
            (0u64..2000).prop_map(|n| n.to_string()),
        ]), 0..12),
    ) {
        let text: String = props.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        check_ycsb(&text);
    }
}

fn check_config(text: &str) {
    let path = Path::new("prop.cnf");
    if let Err(e) = ini::parse(text, path) {
        assert!(e.to_string().starts_with("prop.cnf:"), "{e}");
    }
    match parse_config_text(text, path) {
        Ok(_) | Err(ParseError::Clap(_)) => {}
        Err(ParseError::Config(e)) => assert!(e.to_string().starts_with("prop.cnf"), "{e}"),
    }
}

fn check_ycsb(text: &str) {
    let props = Properties::parse(text);
    for (load, run) in [(false, false), (true, true)] {
        let opts = Options {
            load,
            run,
            ..Options::default()
        };
        match YcsbWorkload::from_properties(Path::new("prop"), &props, &opts) {
            Ok(w) => assert!(!w.phases().is_empty()),
            Err(e) => assert!(!e.is_empty()),
        }
    }
}

/// The fixture histogram logs, by name.
fn fixture_hlogs() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for run in ["closed", "open"] {
        let dir = common::root().join("tests/fixtures/plot").join(run).join("hdr");
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        out.extend(
            paths
                .into_iter()
                .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap())),
        );
    }
    out
}

fn counts(log: &Hlog) -> BTreeMap<String, u64> {
    log.tags.iter().map(|(t, h)| (t.clone(), h.len())).collect()
}

proptest! {
    #![proptest_config(config(CASES))]

    /// A log cut short anywhere reads as a part of the whole: no tag gains calls.
    #[test]
    fn a_histogram_log_cut_short_reads_as_a_part_of_it(which in any::<Index>(), at in any::<Index>()) {
        let logs = fixture_hlogs();
        let (name, bytes) = &logs[which.index(logs.len())];
        let mut notes = Vec::new();
        let whole = counts(&Hlog::parse(bytes, Path::new(name), &mut notes).unwrap());
        prop_assert!(notes.is_empty(), "{:?}", notes);
        let cut = &bytes[..at.index(bytes.len() + 1)];
        let part = counts(&Hlog::parse(cut, Path::new(name), &mut notes).unwrap());
        for (tag, n) in &part {
            prop_assert!(whole.get(tag).is_some_and(|w| n <= w), "{tag}: {n} calls, the whole log has {:?}", whole.get(tag));
        }
    }

    #[test]
    fn edited_histogram_logs_read_or_say_why(text in edited(fixture_hlogs().into_iter().map(|(_, b)| String::from_utf8(b).unwrap()).collect())) {
        let mut notes = Vec::new();
        if let Err(e) = Hlog::parse(text.as_bytes(), Path::new("prop.hlog"), &mut notes) {
            prop_assert!(e.starts_with("prop.hlog: "), "the error names the file: {e}");
        }
        check_hlog_notes(text.as_bytes(), &notes)?;
    }
}

/// What a histogram log reader says about `bytes`, read as `prop.hlog`: every note
/// names the file and its problem, and where the log format's own reader fails on an
/// entry, the read stopped there or before, saying which entry and why.
fn check_hlog_notes(bytes: &[u8], notes: &[String]) -> Result<(), TestCaseError> {
    for note in notes {
        prop_assert!(
            note.starts_with("prop.hlog: ")
                && ["cannot be read", "cannot be decoded", "does not fit the merge"]
                    .iter()
                    .any(|why| note.contains(why)),
            "a note names the file and the problem: {note}"
        );
    }
    // Entries are numbered from 1, as the notes number them.
    let entry_of = |note: &String, what: &str| -> Option<usize> {
        let rest = note.strip_prefix("prop.hlog: ")?.strip_prefix(what)?;
        rest.split_whitespace().next()?.parse().ok()
    };
    let unreadable = IntervalLogIterator::new(bytes).position(|e| e.is_err()).map(|i| i + 1);
    let stopped = notes.iter().find_map(|n| {
        entry_of(n, "entry ")
            .or_else(|| entry_of(n, "interval "))
            .filter(|_| !n.contains("does not fit"))
    });
    if let Some(bad) = unreadable {
        prop_assert!(
            stopped.is_some_and(|at| at <= bad),
            "entry {bad} cannot be read, but the notes do not say the read stopped there: {notes:?}"
        );
    }
    for note in notes.iter().filter(|n| n.contains("cannot be read")) {
        prop_assert_eq!(entry_of(note, "entry "), unreadable, "{}", note);
    }
    Ok(())
}

#[test]
fn a_damaged_histogram_log_names_the_file_the_entry_and_the_problem() {
    let (_, bytes) = &fixture_hlogs()[0];
    let text = String::from_utf8(bytes.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().position(|l| l.starts_with("Tag=")).expect("an interval");
    // The entries before the first interval: the comment lines the log format reads as
    // entries (StartTime, BaseTime) and those it skips.
    let entries_before = IntervalLogIterator::new(text.as_bytes())
        .take_while(|e| !matches!(e, Ok(LogEntry::Interval(_))))
        .count();
    let read = |lines: &[String]| {
        let mut notes = Vec::new();
        let log = Hlog::parse(lines.join("\n").as_bytes(), Path::new("prop.hlog"), &mut notes).unwrap();
        (log, notes)
    };
    let mut damaged: Vec<String> = lines.iter().map(|l| l.to_string()).collect();

    // An interval whose histogram is not base64 of a histogram: decoded, refused.
    let (tag, rest) = damaged[first].split_at(damaged[first].rfind(',').unwrap() + 1);
    damaged[first] = format!("{tag}{}", &rest[..rest.len() / 2]);
    let (log, notes) = read(&damaged);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let head = format!("prop.hlog: interval {} cannot be decoded (", entries_before + 1);
    assert!(
        notes[0].starts_with(&head) && notes[0].ends_with("); the intervals before it are used"),
        "{notes:?}"
    );
    assert!(
        log.tags.is_empty(),
        "nothing before the first interval: {:?}",
        log.tags.keys()
    );
    check_hlog_notes(damaged.join("\n").as_bytes(), &notes).unwrap();

    // A line that is no entry at all: the reader stops at it, naming it.
    damaged[first] = "Tag=run.get,not an interval".to_string();
    let (_, notes) = read(&damaged);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with(&format!("prop.hlog: entry {} cannot be read (", entries_before + 1)),
        "{notes:?}"
    );
    check_hlog_notes(damaged.join("\n").as_bytes(), &notes).unwrap();
    // The property's check catches a reader that stops without saying why.
    assert!(check_hlog_notes(damaged.join("\n").as_bytes(), &[]).is_err());
}

/// One segment's files: results.json, its first point's histogram log, timeline.tsv.
type SegmentFiles = [String; 3];

/// The two segments of a real scaled-out run, written once by the binary.
fn segment_files() -> &'static [SegmentFiles; 2] {
    static FILES: std::sync::OnceLock<[SegmentFiles; 2]> = std::sync::OnceLock::new();
    FILES.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        let one = |i: usize| -> SegmentFiles {
            let parent = d.path().join(format!("s{i}"));
            let o = common::kvmark(&[
                "--backend",
                "skiplist",
                "--ops",
                "300",
                "--items",
                "1000",
                "--timeline",
                "0.05",
                "--segment",
                &format!("{i}/2"),
                "--report-dir",
                parent.to_str().unwrap(),
                &common::bundled("mixed.lua"),
            ]);
            common::assert_exit(&o, 0);
            let dir = std::fs::read_dir(&parent).unwrap().next().unwrap().unwrap().path();
            let hlog = std::fs::read_dir(dir.join("hdr"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("001-"))
                .expect("the first point's log");
            let read = |p: &Path| std::fs::read_to_string(p).unwrap();
            [
                read(&dir.join("results.json")),
                read(&hlog),
                read(&dir.join("timeline.tsv")),
            ]
        };
        [one(0), one(1)]
    })
}

/// Writes `segs` as segment directories under `dir` and merges them into `dir/out`.
fn merge_segments(dir: &Path, segs: &[SegmentFiles]) -> Result<(), String> {
    let mut dirs = Vec::new();
    for (i, [json, hlog, timeline]) in segs.iter().enumerate() {
        let seg = dir.join(format!("seg{i}"));
        std::fs::create_dir_all(seg.join("hdr")).unwrap();
        std::fs::write(seg.join("results.json"), json).unwrap();
        std::fs::write(seg.join("hdr/001-point.hlog"), hlog).unwrap();
        std::fs::write(seg.join("timeline.tsv"), timeline).unwrap();
        dirs.push(seg);
    }
    kvmark::merge::merge(&dirs, &dir.join("out")).map(|_| ())
}

#[test]
fn the_segments_merge_unedited() {
    let d = tempfile::tempdir().unwrap();
    merge_segments(d.path(), segment_files()).unwrap();
}

proptest! {
    #![proptest_config(config(20))]

    /// Segment 0 with one of its files edited merges with segment 1, or fails with a
    /// message.
    #[test]
    fn edited_segments_merge_or_say_why(which in 0usize..3, edits in prop::collection::vec((any::<Index>(), edit()), 1..5)) {
        let mut segs = segment_files().clone();
        segs[0][which] = apply(&segs[0][which], &edits);
        let d = tempfile::tempdir().unwrap();
        if let Err(e) = merge_segments(d.path(), &segs) {
            prop_assert!(!e.is_empty());
        }
    }
}

/// A timeline whose first sample's time is 1e308 s (found by the property above under
/// load; it panicked in the merged histogram log's durations): refused, naming the file.
#[test]
fn a_segment_with_an_impossible_time_is_refused() {
    let mut segs = segment_files().clone();
    let timeline = &segs[0][2];
    let header: Vec<&str> = timeline.lines().next().unwrap().split('\t').collect();
    let col = header.iter().position(|h| *h == "unix_s").unwrap();
    let edited: Vec<String> = timeline
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut f: Vec<&str> = l.split('\t').collect();
            if i == 1 {
                f[col] = "1e308";
            }
            f.join("\t")
        })
        .collect();
    segs[0][2] = edited.join("\n") + "\n";
    let d = tempfile::tempdir().unwrap();
    let e = merge_segments(d.path(), &segs).unwrap_err();
    assert!(e.contains("timeline.tsv: line 2") && e.contains("no run's"), "{e}");
}

// Regressions: inputs that panicked, aborted or hung before issue 21's fuzzing.

/// A minimal spec with one group of `group` (JSON of the group's operations).
fn one_group_spec(group: &str) -> String {
    format!(r#"{{"sections": [{{"key_len": 16, "val_len": 8, "groups": [{{"name": "g", {group}}}]}}]}}"#)
}

#[test]
fn a_spec_naming_more_inserts_than_memory_holds_still_starts() {
    // The live set reserved room for every insert up front: 2^49 ids aborted the process.
    let spec = schema::parse(&one_group_spec(r#""inserts": {"op_count": 562949953421312}"#)).unwrap();
    let plan = Arc::new(plan::build(&spec, "big").unwrap());
    let mut g = Generator::new(plan, 0, 1, 1);
    g.enter(0).unwrap();
    assert!(matches!(g.next_op(), Ok(Some(Op::Insert { .. }))));
}

#[test]
fn a_sorted_group_past_memory_is_refused_by_name() {
    let text = one_group_spec(r#""inserts": {"op_count": 562949953421312}, "sorted": {"k": 1, "l": 1}"#);
    let err = plan::build(&schema::parse(&text).unwrap(), "big").unwrap_err();
    assert!(
        err.contains("sections[0].groups[0].sorted") && err.contains("at most"),
        "{err}"
    );
}

#[test]
fn a_segment_with_a_warmup_no_duration_holds_is_refused_by_name() {
    // Duration::from_secs_f64 panicked on a negative or huge run.warmup_s.
    for warmup in ["-1", "1e300"] {
        let mut segs = segment_files().clone();
        for seg in &mut segs {
            let mut doc: serde_json::Value = serde_json::from_str(&seg[0]).unwrap();
            doc["run"]["warmup_s"] = serde_json::from_str(warmup).unwrap();
            seg[0] = doc.to_string();
        }
        let d = tempfile::tempdir().unwrap();
        let err = merge_segments(d.path(), &segs).unwrap_err();
        assert!(err.contains("run.warmup_s"), "{warmup}: {err}");
    }
}
