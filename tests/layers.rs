//! The layer check (ARCHITECTURE.md, "Layers"): every top-level module of `src/`
//! imports only modules of earlier layers, so there is no import circle between
//! top-level modules, and a new upward import fails here naming the file that made it.
//!
//! The check reads the sources, not the compiler's view: every `crate::X` path (also
//! inside `use crate::{...}` groups) and every `super::` path that leaves its top-level
//! module counts, in code and in tests alike; comments and string literals do not.
//! Set `KVMARK_LAYERS_SRC` to another tree's `src` directory to check that tree (an
//! older commit, say) instead of this one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first. A module may import the modules of earlier layers, and
/// the others of its own layer (never in a circle); never a later layer.
const LAYERS: &[&[&str]] = &[
    // Waiting on the calibrated clock: a base utility.
    &["clock"],
    // The Engine/Store/Session contract and every engine.
    &["engine"],
    // Operation kinds, recorders, histograms, number formatting.
    &["metrics"],
    // Machine, build and device facts (the build probe lists the engines).
    &["probe"],
    // The timed verb set over a session: timing, pacing, key lifetimes.
    &["kv"],
    // Lua scripts, declarative specs and operation logs driving a Kv; the epoch
    // vocabulary a workload can declare.
    &["workload"],
    // What a run produces: point results, SLO and epoch figures.
    &["result"],
    // The grid, crews of workers, the sampler, epochs, the SLO search.
    &["run"],
    // Sinks turning results and samples into output.
    &["report"],
    // Figures and the HTML report from a result directory; a scaled-out run's
    // segment directories merged into one.
    &["plot", "merge"],
    // Flags, config files and the plan built from them.
    &["cli", "config"],
    // Subcommand dispatch.
    &["app"],
];

/// One import of a top-level module by a file of another.
#[derive(Debug, Clone)]
struct Import {
    /// The importing file, relative to the crate root ("src/run/mod.rs").
    file: String,
    /// 1-based line of the path.
    line: usize,
    /// The imported top-level module.
    target: String,
}

#[test]
fn top_level_modules_import_only_earlier_layers() {
    let src = std::env::var_os("KVMARK_LAYERS_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let mut files = Vec::new();
    collect_rs(&src, &mut files);
    assert!(!files.is_empty(), "no .rs files under {}", src.display());
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
            (format!("src/{rel}"), text)
        })
        .collect();
    let problems = check(&sources, LAYERS);
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn the_check_sees_groups_super_paths_cycles_and_upward_imports() {
    let layers: &[&[&str]] = &[&["a"], &["b"], &["c"]];
    let tree = |files: &[(&str, &str)]| -> Vec<String> {
        let owned: Vec<(String, String)> = files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect();
        check(&owned, layers)
    };
    // Downward imports only, in every form: fine.
    let ok = tree(&[
        ("src/a.rs", "pub fn f() {}"),
        ("src/b/mod.rs", "use crate::{a::f, self as _};\npub mod x;"),
        ("src/b/x.rs", "use super::super::a;\nuse super::Y;"),
        (
            "src/c.rs",
            "fn g() { crate::b::x::h(); let _ = \"crate::c\"; } // crate::c",
        ),
    ]);
    assert!(ok.is_empty(), "{ok:?}");
    // An upward import through a group, one through super::, and the circle they make.
    let bad = tree(&[
        ("src/a.rs", "use crate::{\n    c::Z,\n};"),
        ("src/b.rs", "/* crate::c */ mod t { use super::super::c; }"),
        ("src/c.rs", "use crate::a;\nuse crate::b;"),
    ]);
    let text = bad.join("\n");
    assert!(text.contains("src/a.rs:2 imports crate::c"), "{text}");
    assert!(text.contains("src/b.rs:1 imports crate::c"), "{text}");
    assert!(text.contains("import circle: a -> c -> a"), "{text}");
    // A module the table does not place.
    let unplaced = tree(&[("src/a.rs", ""), ("src/d.rs", "")]);
    assert!(unplaced.join("\n").contains("module d is in no layer"), "{unplaced:?}");
}

/// Every `.rs` file under `dir`, sorted.
fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect_rs(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The problems of a tree of (path under the crate root, source) against `layers`:
/// modules in no layer, upward imports, and import circles. Empty when all is well.
fn check(sources: &[(String, String)], layers: &[&[&str]]) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, ms)| ms.iter().map(move |m| (*m, i)))
        .collect();
    let mut problems = Vec::new();
    let mut modules = BTreeSet::new();
    let mut imports: Vec<(String, Import)> = Vec::new();
    for (file, text) in sources {
        let path = module_path(file);
        let Some(top) = path.first().cloned() else {
            continue; // lib.rs and main.rs: the root declares the modules
        };
        modules.insert(top.clone());
        for import in imports_of(file, text, &path) {
            if import.target != top {
                imports.push((top.clone(), import));
            }
        }
    }
    for m in &modules {
        if !layer_of.contains_key(m.as_str()) {
            problems.push(format!(
                "module {m} is in no layer: add it to LAYERS in tests/layers.rs (and to ARCHITECTURE.md)"
            ));
        }
    }
    for (from, import) in &imports {
        let (Some(&lf), Some(&lt)) = (layer_of.get(from.as_str()), layer_of.get(import.target.as_str())) else {
            continue;
        };
        if lt > lf {
            let allowed: Vec<&str> = layers[..lf].iter().flat_map(|l| l.iter().copied()).collect();
            problems.push(format!(
                "{}:{} imports crate::{}, a later layer: {from} may import only {} (see LAYERS in tests/layers.rs)",
                import.file,
                import.line,
                import.target,
                if allowed.is_empty() {
                    "nothing".to_string()
                } else {
                    allowed.join(", ")
                },
            ));
        }
    }
    // The first import of each edge, to name in a circle.
    let mut edges: BTreeMap<(String, String), &Import> = BTreeMap::new();
    for (from, import) in &imports {
        edges.entry((from.clone(), import.target.clone())).or_insert(import);
    }
    for (group, cycle) in cycles(&edges) {
        let names: Vec<&str> = cycle.iter().map(String::as_str).chain([cycle[0].as_str()]).collect();
        let witnesses: Vec<String> = names
            .windows(2)
            .map(|w| {
                let i = edges[&(w[0].to_string(), w[1].to_string())];
                format!("{}:{} imports crate::{}", i.file, i.line, i.target)
            })
            .collect();
        let among = if group.len() > cycle.len() {
            format!(" (one of those among {})", group.join(", "))
        } else {
            String::new()
        };
        problems.push(format!(
            "import circle: {}{among}: {}",
            names.join(" -> "),
            witnesses.join("; ")
        ));
    }
    problems
}

/// Each strongly connected group of modules with one circle through it (Tarjan's
/// algorithm, then a shortest way back to the group's first module).
fn cycles(edges: &BTreeMap<(String, String), &Import>) -> Vec<(Vec<String>, Vec<String>)> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    let nodes: Vec<&str> = next.keys().copied().collect();
    let index_of: BTreeMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| next[n].iter().map(|m| index_of[m]).collect())
        .collect();

    struct Tarjan<'a> {
        succ: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        groups: Vec<Vec<usize>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.counter);
            self.low[v] = self.counter;
            self.counter += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            for &w in &self.succ[v] {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    group.push(w);
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.groups.push(group);
                }
            }
        }
    }
    let mut t = Tarjan {
        succ: &succ,
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        on_stack: vec![false; nodes.len()],
        stack: Vec::new(),
        counter: 0,
        groups: Vec::new(),
    };
    for v in 0..nodes.len() {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    let mut out = Vec::new();
    for group in &t.groups {
        // Breadth-first from the group's first module, within the group, back to it.
        let start = group[0];
        let mut parent: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut end = None;
        'search: while let Some(v) = queue.pop_front() {
            for &w in &succ[v] {
                if w == start {
                    end = Some(v);
                    break 'search;
                }
                if group.contains(&w) && w != start && !parent.contains_key(&w) {
                    parent.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        let mut path = Vec::new();
        let mut v = end.expect("a strongly connected group has a circle");
        while v != start {
            path.push(nodes[v].to_string());
            v = parent[&v];
        }
        path.push(nodes[start].to_string());
        path.reverse();
        out.push((group.iter().map(|&v| nodes[v].to_string()).collect(), path));
    }
    out
}

/// The module path of a file: "src/run/kv/open.rs" is run::kv::open, "src/run/mod.rs"
/// is run, "src/lib.rs" and "src/main.rs" are the root (empty).
fn module_path(file: &str) -> Vec<String> {
    let rel = file.strip_prefix("src/").unwrap_or(file);
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] || parts == ["main"] {
        parts.clear();
    }
    parts
}

/// A token of Rust source and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
struct Token {
    text: String,
    line: usize,
}

/// The identifiers, `::` and single punctuation characters of `text`, with comments,
/// string literals and character literals left out.
fn tokens(text: &str) -> Vec<Token> {
    let c: Vec<char> = text.chars().collect();
    let n = c.len();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let ident_start = |ch: char| ch.is_alphabetic() || ch == '_';
    let ident_char = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < n {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < n && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < n {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if let Some(after) = raw_string_start(&c, i) {
            // r"..", r#".."#, br".." : no escapes, ends at the quote and as many #.
            let hashes = after - i - 1 - usize::from(c[i] == 'b') - 1;
            i = after;
            while i < n {
                if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                line += usize::from(c[i] == '\n');
                i += 1;
            }
        } else if ch == '"' || (ch == 'b' && c.get(i + 1) == Some(&'"')) {
            i += if ch == 'b' { 2 } else { 1 };
            while i < n && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                line += usize::from(c.get(i) == Some(&'\n'));
                i += 1;
            }
            i += 1;
        } else if ch == '\'' {
            // A character literal ('a', '\n', '\u{..}') or a lifetime ('a).
            if c.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < n && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if ident_start(ch) {
            let start = i;
            while i < n && ident_char(c[i]) {
                i += 1;
            }
            out.push(Token {
                text: c[start..i].iter().collect(),
                line,
            });
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Token {
                text: "::".to_string(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: ch.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// Where the body of a raw string starting at `i` begins, if one starts there.
fn raw_string_start(c: &[char], i: usize) -> Option<usize> {
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if c.get(j) == Some(&'b') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    while c.get(j) == Some(&'#') {
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some(j + 1)
}

/// The top-level modules `text` (the file `file`, module `path`) names through
/// `crate::` and `super::` paths.
fn imports_of(file: &str, text: &str, path: &[String]) -> Vec<Import> {
    let toks = tokens(text);
    let t = |k: usize| toks.get(k).map_or("", |x| x.text.as_str());
    let mut out = Vec::new();
    // Inline modules (`mod tests { .. }`) deepen the path that super:: climbs from.
    let mut current: Vec<String> = path.to_vec();
    let mut open_mods: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    for k in 0..toks.len() {
        match t(k) {
            "{" => {
                depth += 1;
                if k >= 2 && t(k - 2) == "mod" {
                    current.push(t(k - 1).to_string());
                    open_mods.push(depth);
                }
            }
            "}" => {
                if open_mods.last() == Some(&depth) {
                    open_mods.pop();
                    current.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        let follows_path = k > 0 && t(k - 1) == "::";
        if follows_path {
            continue;
        }
        let (base, rest) = match t(k) {
            "crate" if t(k + 1) == "::" => (Vec::new(), k + 2),
            "super" if t(k + 1) == "::" => {
                let mut base = current.clone();
                let mut j = k;
                while t(j) == "super" && t(j + 1) == "::" {
                    base.pop();
                    j += 2;
                }
                (base, j)
            }
            _ => continue,
        };
        let mut heads = Vec::new();
        if base.is_empty() {
            if t(rest) == "{" {
                // A group: the first name of each item at its top level.
                let mut level = 0;
                let mut expect = true;
                for j in rest..toks.len() {
                    match t(j) {
                        "{" => level += 1,
                        "}" => {
                            level -= 1;
                            if level == 0 {
                                break;
                            }
                        }
                        "," if level == 1 => {
                            expect = true;
                            continue;
                        }
                        _ => {}
                    }
                    if level == 1 && expect && t(j) != "{" {
                        heads.push(j);
                        expect = false;
                    }
                }
            } else {
                heads.push(rest);
            }
        } else {
            // Still inside some top-level module: that module is the target.
            out.push(Import {
                file: file.to_string(),
                line: toks[k].line,
                target: base[0].clone(),
            });
        }
        for h in heads {
            let name = t(h);
            if name.is_empty()
                || name == "self"
                || name == "*"
                || !name.starts_with(|c: char| c.is_alphabetic() || c == '_')
            {
                continue;
            }
            out.push(Import {
                file: file.to_string(),
                line: toks[h].line,
                target: name.to_string(),
            });
        }
    }
    out
}

/// The test and bench builds share the release build's dependencies: no
/// dev-dependency turns on a feature of a crate the release build also compiles. Such
/// a feature gives that crate, and every crate above it, a second build for the tests
/// (memcache-async's `futures/std` turned on futures-util's `channel` and made `make
/// test` compile mongodb, tonic and the kvmark library again; Cargo.toml now turns it
/// on for every build). `cargo tree` lists each crate with its features, with and
/// without the dev-dependencies; a crate in both lists must have the same features.
#[test]
fn dev_dependencies_turn_on_no_feature_the_release_build_lacks() {
    // A crate built for the host (a build script's dependency) and for the target
    // may have two feature sets: each crate maps to every set it is built with.
    let features = |edges: &str| -> BTreeMap<String, BTreeSet<String>> {
        let o = std::process::Command::new(env!("CARGO"))
            .args(["tree", "--locked", "-e", edges, "--prefix", "none", "--no-dedupe"])
            .args(["--format", "{p}|{f}"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("run cargo tree");
        assert!(o.status.success(), "cargo tree: {}", String::from_utf8_lossy(&o.stderr));
        let mut sets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (p, f) in String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| l.split_once('|'))
        {
            // `{p}` may go on with a path or " (*)"; the crate is its name and version.
            let crate_id = p.split(' ').take(2).collect::<Vec<_>>().join(" ");
            sets.entry(crate_id).or_default().insert(f.to_string());
        }
        sets
    };
    let release = features("normal,build");
    let tests = features("normal,build,dev");
    assert!(release.len() > 100, "{release:?}");
    let split: Vec<String> = release
        .iter()
        .filter_map(|(c, f)| {
            let g = tests.get(c)?;
            (g != f).then(|| format!("{c}: release {f:?}, tests {g:?}"))
        })
        .collect();
    assert!(
        split.is_empty(),
        "the dev-dependencies turn on features the release build lacks, so the tests build these crates (and all above them) twice; turn the features on in [dependencies]:\n{}",
        split.join("\n")
    );
}
