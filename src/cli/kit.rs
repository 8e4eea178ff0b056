//! A command-line tool's usual kit: the flags of `kvmark compare`, `kvmark man` and
//! `kvmark completions`, and the man pages and completion scripts, generated from the
//! clap definitions in [`super::args`] so they never drift from the real flags.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory, ValueEnum};

use super::Cli;

/// Flags of `kvmark compare`.
#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// The baseline: a report directory (written by --report-dir) or a results.json.
    #[arg(value_name = "A")]
    pub baseline: PathBuf,

    /// The run compared with it, in the same form.
    #[arg(value_name = "B")]
    pub candidate: PathBuf,

    /// Output: table (for people), tsv or json. [default: table]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// Exit 1 when a point's throughput in B is more than PCT percent below A's and
    /// the drop is significant (or, with too few repeats to test, the drop alone).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    pub fail_if_slower: Option<f64>,

    /// Exit 1 when a latency figure (p50, p90, p99, p99.9 or max of an operation
    /// kind's service or response time) in B is more than PCT percent above A's and
    /// the rise is significant (or, when it cannot be judged, the rise alone).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    pub fail_if_latency_worse: Option<f64>,

    /// Significance level of the Mann-Whitney U tests on per-repeat throughputs and
    /// latencies.
    /// [default: 0.05]
    #[arg(long, value_name = "P", value_parser = alpha)]
    pub alpha: Option<f64>,
}

/// Flags of `kvmark man`.
#[derive(Debug, Args, Clone)]
pub struct ManArgs {
    /// Write kvmark.1 and one page per subcommand (kvmark-plot.1, ...) into DIR
    /// instead of printing kvmark.1 to stdout.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// The shells `kvmark completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// GNU Bash.
    Bash,
    /// Z shell.
    Zsh,
    /// The friendly interactive shell.
    Fish,
}

/// Flags of `kvmark completions`.
#[derive(Debug, Args, Clone)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
}

fn percent(text: &str) -> Result<f64, String> {
    match text.trim_end_matches('%').parse::<f64>() {
        Ok(p) if (0.0..100.0).contains(&p) => Ok(p),
        _ => Err(format!("'{text}' is not a percentage from 0 to 100 (e.g. 5)")),
    }
}

fn alpha(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!(
            "'{text}' is not a significance level between 0 and 1 (e.g. 0.05)"
        )),
    }
}

/// kvmark's command with its name fixed, as the generators need it.
fn command() -> clap::Command {
    Cli::command().name("kvmark").bin_name("kvmark")
}

/// The main man page, kvmark.1, as roff.
pub fn man_page() -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(command()).render(&mut out)?;
    Ok(out)
}

/// Writes kvmark.1 and a page per subcommand (`kvmark-compare.1`, ...) into `dir`,
/// returning the files written.
pub fn write_man_pages(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    // clap names a built subcommand's page after its display name, kvmark-SUB.
    clap_mangen::generate_to(command(), dir)?;
    let mut written: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("kvmark") && n.ends_with(".1"))
        })
        .collect();
    written.sort();
    Ok(written)
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    let mut cmd = command();
    match shell {
        Shell::Bash => clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "kvmark", &mut out),
        Shell::Zsh => clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, "kvmark", &mut out),
        Shell::Fish => clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, "kvmark", &mut out),
    }
    out
}

/// `kvmark man`: the page to stdout, or every page into `--out-dir`.
pub fn run_man(args: &ManArgs) -> Result<(), String> {
    match &args.out_dir {
        Some(dir) => {
            let written =
                write_man_pages(dir).map_err(|e| format!("--out-dir {}: cannot write: {e}", dir.display()))?;
            eprintln!("kvmark: wrote {} man page(s) to {}", written.len(), dir.display());
            Ok(())
        }
        None => {
            let page = man_page().map_err(|e| format!("cannot render the man page: {e}"))?;
            write_stdout(&page)
        }
    }
}

/// `kvmark completions SHELL`.
pub fn run_completions(args: &CompletionsArgs) -> Result<(), String> {
    write_stdout(&completions(args.shell))
}

fn write_stdout(bytes: &[u8]) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        // A closed pipe (`kvmark man | head`) is the reader's choice, not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| format!("cannot write to stdout: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_values_are_checked() {
        assert_eq!(percent("5"), Ok(5.0));
        assert_eq!(percent("12.5%"), Ok(12.5));
        assert!(percent("-1").is_err() && percent("100").is_err() && percent("x").is_err());
        assert_eq!(alpha("0.05"), Ok(0.05));
        assert!(alpha("0").is_err() && alpha("1").is_err());
    }
}
