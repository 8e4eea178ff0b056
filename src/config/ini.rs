//! A small, strict INI reader: `[section]` headers and `key = value` lines.
//!
//! A comment starts at the beginning of a line or after whitespace, with `;` or `#`.
//! So `a = 1 ; note` is `1`, while `opts = {block_cache=64M;filter_policy=x}` keeps its
//! semicolon (RocksDB option strings depend on that). Every entry remembers its line,
//! so later checks can name the file and line of a bad value.

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem in a config file, located by file and (usually) line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line, when the problem has one.
    pub line: Option<usize>,
    /// What is wrong and how to fix it.
    pub msg: String,
}

impl ConfigError {
    /// An error at `line` of `file`.
    pub fn at(file: &Path, line: usize, msg: impl Into<String>) -> Self {
        ConfigError {
            file: file.to_path_buf(),
            line: Some(line),
            msg: msg.into(),
        }
    }

    /// An error about the whole file.
    pub fn file(file: &Path, msg: impl Into<String>) -> Self {
        ConfigError {
            file: file.to_path_buf(),
            line: None,
            msg: msg.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.msg),
            None => write!(f, "{}: {}", self.file.display(), self.msg),
        }
    }
}

impl std::error::Error for ConfigError {}

/// One `key = value` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The key, trimmed.
    pub key: String,
    /// The value, trimmed, comment removed (may be empty).
    pub value: String,
    /// 1-based line number.
    pub line: usize,
}

/// A `[name]` section with its entries in file order. A name repeated in the file
/// continues the same section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The name between the brackets, trimmed.
    pub name: String,
    /// Line of the first header.
    pub line: usize,
    /// Entries in order.
    pub entries: Vec<Entry>,
}

/// A parsed file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ini {
    /// Sections in order of first appearance.
    pub sections: Vec<Section>,
}

/// Removes a trailing comment: `;` or `#` at the start or after whitespace.
fn strip_comment(line: &str) -> &str {
    let mut prev_space = true;
    for (i, c) in line.char_indices() {
        if (c == ';' || c == '#') && prev_space {
            return &line[..i];
        }
        prev_space = c.is_whitespace();
    }
    line
}

/// Whether `line` is the unquoted first line keybench writes atop its replay configs
/// ("keybench 0.1.0 replay file - reproduce with:  keybench --config run.cnf"), which
/// keybench's own reader skips as a line without `=`.
fn is_keybench_header(line: &str) -> bool {
    line.starts_with("keybench ") && line.contains(" replay file")
}

/// Parses `text`, read from `file` (used in messages).
pub fn parse(text: &str, file: &Path) -> Result<Ini, ConfigError> {
    let mut ini = Ini::default();
    let mut current: Option<usize> = None;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = strip_comment(raw).trim();
        if line.is_empty() || (n == 1 && is_keybench_header(line)) {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| ConfigError::at(file, n, format!("'{line}': a section header is [name]")))?
                .trim();
            if name.is_empty() || name.contains(['[', ']']) {
                return Err(ConfigError::at(
                    file,
                    n,
                    format!("'{line}': a section header is [name]"),
                ));
            }
            current = Some(match ini.sections.iter().position(|s| s.name == name) {
                Some(idx) => idx,
                None => {
                    ini.sections.push(Section {
                        name: name.to_string(),
                        line: n,
                        entries: Vec::new(),
                    });
                    ini.sections.len() - 1
                }
            });
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(ConfigError::at(
                file,
                n,
                format!("'{line}': expected KEY = VALUE or a [section] header"),
            ));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(ConfigError::at(file, n, format!("'{line}': the key is missing")));
        }
        let Some(idx) = current else {
            return Err(ConfigError::at(
                file,
                n,
                format!("'{key}' is outside any section: put run settings under [bench]"),
            ));
        };
        ini.sections[idx].entries.push(Entry {
            key: key.to_string(),
            value: value.trim().to_string(),
            line: n,
        });
    }
    Ok(ini)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Ini, ConfigError> {
        parse(text, Path::new("t.cnf"))
    }

    #[test]
    fn sections_entries_and_lines() {
        let ini =
            p("; top\n[bench]\nthreads = 1,2\n\n# c\n[rocksdb]\nwrite_buffer_size=64M\n[bench]\nops = 5\n").unwrap();
        assert_eq!(ini.sections.len(), 2);
        let bench = &ini.sections[0];
        assert_eq!(bench.name, "bench");
        assert_eq!(
            bench.entries,
            vec![
                Entry {
                    key: "threads".into(),
                    value: "1,2".into(),
                    line: 3
                },
                Entry {
                    key: "ops".into(),
                    value: "5".into(),
                    line: 9
                }
            ]
        );
        assert_eq!(ini.sections[1].entries[0].value, "64M");
    }

    #[test]
    fn comments_need_whitespace_before_them() {
        let ini = p("[rocksdb]\nblock_based_table_factory = {block_cache=64M;filter_policy=bloomfilter:10:false}\na = 1 ; note\nb = 2\t# note\nc = x#y\n  ; indented comment\n").unwrap();
        let e = &ini.sections[0].entries;
        assert_eq!(e[0].value, "{block_cache=64M;filter_policy=bloomfilter:10:false}");
        assert_eq!(e[1].value, "1");
        assert_eq!(e[2].value, "2");
        assert_eq!(e[3].value, "x#y");
        assert_eq!(e.len(), 4);
    }

    #[test]
    fn errors_name_file_and_line() {
        let err = p("[bench]\nthreads 4\n").unwrap_err();
        assert_eq!(err.line, Some(2));
        assert!(err.to_string().starts_with("t.cnf:2: "), "{err}");
        assert_eq!(p("ops = 1\n").unwrap_err().line, Some(1));
        assert_eq!(p("[bench\n").unwrap_err().line, Some(1));
        assert_eq!(p("[]\n").unwrap_err().line, Some(1));
        assert_eq!(p("[bench]\n= 3\n").unwrap_err().line, Some(2));
    }

    #[test]
    fn crlf_and_bom_are_tolerated() {
        let ini = p("\u{feff}[bench]\r\nops = 5\r\n").unwrap();
        assert_eq!(ini.sections[0].entries[0].value, "5");
    }
}
