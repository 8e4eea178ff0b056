//! The command-line kit: man pages and shell completions generated from the clap
//! definitions, and `make install` putting them where man and the shells look.

mod common;

use std::process::Command;

use common::{kvmark, root};

/// Flags every generated document must name: the main run flags and the newest ones.
const MAIN_FLAGS: [&str; 8] = [
    "--backend",
    "--threads",
    "--secs",
    "--report-dir",
    "--rate",
    "--engine-opt",
    "--metrics-listen",
    "--timeline",
];

fn stdout(args: &[&str]) -> String {
    let out = kvmark(args);
    assert!(
        out.status.success(),
        "kvmark {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

#[test]
fn the_man_page_documents_the_flags_and_subcommands() {
    let page = stdout(&["man"]);
    assert!(page.contains(".TH kvmark 1"), "{}", &page[..page.len().min(400)]);
    // roff escapes hyphens as \-.
    let text = page.replace("\\-", "-");
    for flag in MAIN_FLAGS {
        assert!(text.contains(flag), "the man page lacks {flag}");
    }
    for sub in ["compare", "plot", "engines", "completions"] {
        assert!(text.contains(sub), "the man page lacks the {sub} subcommand");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = kvmark(&["man", "--out-dir", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let compare = std::fs::read_to_string(dir.path().join("kvmark-compare.1")).unwrap();
    assert!(compare.replace("\\-", "-").contains("--fail-if-slower"), "{compare}");
    assert!(dir.path().join("kvmark.1").exists());
}

/// The names a completion script offers, as whole words in each shell's syntax, so
/// `threads` is not found inside `--seed-threads` nor `compare` inside a help text.
fn offered_names(shell: &str, script: &str) -> Vec<String> {
    match shell {
        // The top-level case's `opts="-h -V --ops ... compare ..."`: flags and subcommands.
        "bash" => script
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("opts=\"") && l.contains(" --ops "))
            .expect("bash completions have the top-level opts line")
            .trim_start_matches("opts=\"")
            .trim_end_matches('"')
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        // One `_arguments` spec a line: `'*--threads=[help]:LIST:_default'` for a flag
        // (after any `(--other)` exclusions), `'compare:help'` for a subcommand; the
        // name ends at its first `=`, `[` or `:`.
        "zsh" => script
            .lines()
            .filter_map(|l| l.strip_prefix('\''))
            .map(|l| {
                l.split_once(')')
                    .filter(|_| l.starts_with('('))
                    .map_or(l, |(_, rest)| rest)
            })
            .map(|l| l.trim_start_matches('*'))
            .filter_map(|l| l.split(['=', '[', ':', '\'']).next())
            .map(str::to_string)
            .collect(),
        // `complete -c kvmark ... -l threads ...` for a flag (named without dashes, given
        // back with them here), `-a "compare"` for a subcommand.
        "fish" => {
            let mut names = Vec::new();
            for line in script.lines() {
                let words: Vec<&str> = line.split_whitespace().collect();
                for pair in words.windows(2) {
                    match pair[0] {
                        "-l" => names.push(format!("--{}", pair[1])),
                        "-a" => names.push(pair[1].trim_matches('"').to_string()),
                        _ => {}
                    }
                }
            }
            names
        }
        other => panic!("no shell {other}"),
    }
}

#[test]
fn completions_name_the_flags_in_every_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout(&["completions", shell]);
        let names = offered_names(shell, &script);
        for flag in MAIN_FLAGS.iter().chain(&["compare"]) {
            assert!(
                names.iter().any(|n| n == flag),
                "{shell} completions lack {flag}: they offer {names:?}"
            );
        }
    }
    let bad = kvmark(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bash, zsh, fish"));
}

#[test]
fn bash_completes_a_flag_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("kvmark.bash");
    std::fs::write(&script, stdout(&["completions", "bash"])).unwrap();
    // Load the script and ask its completion function what `kvmark --metr` becomes.
    let probe = format!(
        "source '{}'; COMP_WORDS=(kvmark --metr); COMP_CWORD=1; COMP_LINE='kvmark --metr'; COMP_POINT=13; \
         _kvmark kvmark --metr kvmark; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = Command::new("bash").args(["-c", &probe]).output().unwrap();
    let words = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        words.trim(),
        "--metrics-listen",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn make_install_stages_the_binary_man_pages_and_completions() {
    let dest = tempfile::tempdir().unwrap();
    let out = Command::new("make")
        .arg("install")
        .arg(format!("KVMARK_BIN={}", env!("CARGO_BIN_EXE_kvmark")))
        .arg(format!("DESTDIR={}", dest.path().display()))
        .arg("PREFIX=/usr")
        .current_dir(root())
        .output()
        .expect("run make");
    assert!(
        out.status.success(),
        "make install failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let usr = dest.path().join("usr");
    for file in [
        "bin/kvmark",
        "share/man/man1/kvmark.1",
        "share/man/man1/kvmark-compare.1",
        "share/bash-completion/completions/kvmark",
        "share/zsh/site-functions/_kvmark",
        "share/fish/vendor_completions.d/kvmark.fish",
    ] {
        let path = usr.join(file);
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        assert!(len > 0, "make install left {} missing or empty", path.display());
    }
    let version = Command::new(usr.join("bin/kvmark")).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("kvmark "));
}

/// The development scripts of docs/development.md refuse a bad count before doing
/// anything (installing packages, building, starting stress-ng), naming it.
#[test]
fn the_development_scripts_refuse_bad_counts_naming_them() {
    for (script, args, says) in [
        (
            "scripts/test-under-load",
            &["0"][..],
            "RUNS must be a whole number above 0, not '0'",
        ),
        (
            "scripts/test-under-load",
            &["2", "x"][..],
            "STRESSORS must be a whole number above 0, not 'x'",
        ),
        (
            "scripts/build-timings",
            &["ten"][..],
            "N must be a whole number above 0, not 'ten'",
        ),
    ] {
        let out = Command::new(root().join(script)).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{script} {args:?}: {err}");
        assert!(err.contains(says), "{script} {args:?}: {err}");
    }
}
