//! Report files that never hold a torn row or a truncated document. A sink writes
//! into memory; each flush (sinks flush after a row, a finished point, the end) puts
//! what was written since the last flush into the file in one write, or, on an error
//! such as a full disk, cuts the file back to its last whole state and reports the
//! error. A document rewritten as it grows (results.json, see [`AtomicFile::restart`])
//! goes to a temporary file beside the report file that is then renamed over it. So a
//! run killed at any moment leaves each report file whole as of its last flush, and no
//! file exists before there is something in it.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A report file that changes only by whole flushes.
pub struct AtomicFile {
    path: PathBuf,
    temp: PathBuf,
    /// Bytes written since the last flush (for a rewritten document: all of it).
    buf: Vec<u8>,
    /// The open file of an appended report, from its first flush.
    file: Option<File>,
    /// Its length after the last successful flush.
    committed: u64,
    /// True when every flush replaces the whole file (after [`AtomicFile::restart`]).
    whole: bool,
}

impl AtomicFile {
    /// A report file at `path`. Its directory is checked for writing now, so a bad
    /// path fails before anything runs; the file itself appears at the first flush.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(".partial");
        let temp = path.with_file_name(temp_name);
        File::create(&temp)?;
        std::fs::remove_file(&temp)?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            temp,
            buf: Vec::new(),
            file: None,
            committed: 0,
            whole: false,
        })
    }

    /// Drops what was written since the last flush and makes the next flush replace
    /// the whole file with what is written from now on (a document rewritten as it
    /// grows).
    pub fn restart(&mut self) {
        self.buf.clear();
        self.whole = true;
    }

    /// Appends the buffer, or cuts the file back to its last whole state.
    fn append(&mut self) -> io::Result<()> {
        if self.file.is_none() {
            self.file = Some(File::create(&self.path)?);
        }
        let f = self.file.as_mut().expect("opened above");
        if let Err(e) = f.write_all(&self.buf) {
            let _ = f.set_len(self.committed);
            return Err(e);
        }
        self.committed += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Writes the buffer to the temporary file and renames it over the report file.
    fn replace(&mut self) -> io::Result<()> {
        let written = (|| {
            let mut f = File::create(&self.temp)?;
            f.write_all(&self.buf)?;
            // On the disk before the rename, so a crash of the machine cannot leave
            // the report's name on empty content.
            f.sync_data()?;
            std::fs::rename(&self.temp, &self.path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&self.temp);
        }
        written
    }
}

impl Write for AtomicFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let done = if self.whole {
            self.replace()
        } else if self.buf.is_empty() && self.file.is_some() {
            Ok(())
        } else {
            self.append()
        };
        done.map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_appears_whole_at_each_flush_and_never_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("points.tsv");
        let mut f = AtomicFile::create(&path).unwrap();
        assert!(!path.exists(), "nothing before the first flush");
        write!(f, "a\tb\n1\t").unwrap();
        assert!(!path.exists());
        writeln!(f, "2").unwrap();
        f.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\tb\n1\t2\n");
        writeln!(f, "3\t4").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "a\tb\n1\t2\n",
            "unflushed rows stay out"
        );
        f.flush().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "a\tb\n1\t2\n3\t4\n",
            "appended"
        );
        f.restart();
        write!(f, "{{}}").unwrap();
        f.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["points.tsv"], "no temporary file left");
    }

    #[test]
    fn a_bad_directory_fails_at_create() {
        let err = AtomicFile::create(Path::new("/nonexistent-kvmark-dir/x.tsv"))
            .err()
            .unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_failed_flush_keeps_the_last_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let mut f = AtomicFile::create(&path).unwrap();
        f.restart();
        write!(f, "first").unwrap();
        f.flush().unwrap();
        // The temporary name taken by a directory makes the next commit fail.
        std::fs::create_dir(dir.path().join(".r.json.partial")).unwrap();
        f.restart();
        write!(f, "second").unwrap();
        assert!(f.flush().unwrap_err().to_string().contains("r.json"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
    }
}
