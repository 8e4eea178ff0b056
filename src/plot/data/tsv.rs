//! A tab-separated table with a header line, read leniently: a row cut short (the
//! last line of a run that died) is reported and left out, columns are found by
//! name so columns appended later are harmless.

use std::collections::HashMap;
use std::path::Path;

/// A parsed table.
#[derive(Debug, Default)]
pub struct Table {
    columns: HashMap<String, usize>,
    /// The data rows, split into fields.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Parses `text` read from `path`; `required` columns must be in the header.
    /// Problems that leave rows out are pushed to `notes`.
    pub fn parse(text: &str, path: &Path, required: &[&str], notes: &mut Vec<String>) -> Result<Table, String> {
        let mut lines = text.split('\n');
        let header = lines.next().unwrap_or("").trim_end_matches('\r');
        if header.is_empty() {
            return Err(format!("{}: empty file (no header line)", path.display()));
        }
        let columns: HashMap<String, usize> = header
            .split('\t')
            .enumerate()
            .map(|(i, c)| (c.to_string(), i))
            .collect();
        let missing: Vec<&str> = required.iter().copied().filter(|c| !columns.contains_key(*c)).collect();
        if !missing.is_empty() {
            return Err(format!(
                "{}: not a kvmark table: the header lacks column(s) {}",
                path.display(),
                missing.join(", ")
            ));
        }
        let width = columns.len();
        let mut rows = Vec::new();
        let mut short = Vec::new();
        let ends_with_newline = text.ends_with('\n');
        let body: Vec<&str> = lines.collect();
        for (i, line) in body.iter().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                continue;
            }
            let fields: Vec<String> = line.split('\t').map(str::to_string).collect();
            let last = i + 1 == body.len() && !ends_with_newline;
            if fields.len() < width || last {
                short.push(i + 2);
                continue;
            }
            rows.push(fields);
        }
        if !short.is_empty() {
            let lines = short.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
            notes.push(format!(
                "{}: line(s) {lines} cut short (the run stopped while writing?); left out",
                path.display()
            ));
        }
        Ok(Table { columns, rows })
    }

    /// The field of `col` in row `r`, if the column exists.
    pub fn get(&self, r: usize, col: &str) -> Option<&str> {
        let i = *self.columns.get(col)?;
        self.rows.get(r)?.get(i).map(String::as_str)
    }

    /// The field as a number; None for `-`, an empty field or a missing column.
    pub fn num(&self, r: usize, col: &str) -> Option<f64> {
        self.get(r, col).and_then(|s| s.parse::<f64>().ok())
    }

    /// True when the header has `col`.
    pub fn has(&self, col: &str) -> bool {
        self.columns.contains_key(col)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_cut_short_is_left_out_and_reported() {
        let mut notes = Vec::new();
        let t = Table::parse("a\tb\n1\t2\n3\t4\n5", Path::new("x.tsv"), &["a"], &mut notes).unwrap();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.num(1, "b"), Some(4.0));
        assert_eq!(t.get(0, "c"), None);
        assert!(notes[0].contains("x.tsv: line(s) 4 cut short"), "{notes:?}");
    }

    #[test]
    fn a_table_without_the_columns_is_refused() {
        let err = Table::parse("x\ty\n", Path::new("p.tsv"), &["engine"], &mut Vec::new()).unwrap_err();
        assert!(err.contains("p.tsv: not a kvmark table"), "{err}");
        assert!(Table::parse("", Path::new("e.tsv"), &[], &mut Vec::new()).is_err());
    }
}
