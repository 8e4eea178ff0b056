//! The operation log: Tectonic's text line format, one operation per line, fields
//! separated by one space.
//!
//! ```text
//! I key value        insert            U key value    update
//! M key value        merge (append)    W key value    read-modify-write (kvmark)
//! P key              point query       D key          point delete
//! S lo hi | S lo n   range query (end key, or a row count)
//! R lo hi            range delete
//! # phase NAME       starts a phase (kvmark); other lines starting with # are comments
//! ```
//!
//! Escaping: bytes from `!` to `~` are written as they are, except the backslash.
//! A backslash is written `\\`, any other byte (space, control bytes, bytes >= 0x7f)
//! as `\xHH`, and an empty key or value as `\e`. In `S` and `R` lines a second field
//! made only of digits is a row count, so an end key made only of digits is written
//! with its first character escaped (`123` as `\x3123`).

use std::io::{self, Write};

use super::op::Op;

#[inline]
fn plain(b: u8) -> bool {
    b > b' ' && b < 0x7f && b != b'\\'
}

/// True when `s` needs no escaping. Folds whole chunks without early exit so the
/// compiler vectorises it (values are long).
#[inline]
fn all_plain(s: &[u8]) -> bool {
    s.chunks(64).all(|c| c.iter().fold(true, |acc, &b| acc & plain(b)))
}

fn write_escaped(out: &mut impl Write, s: &[u8], escape_first: bool) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    for (i, &b) in s.iter().enumerate() {
        if plain(b) && !(escape_first && i == 0) {
            continue;
        }
        out.write_all(&s[start..i])?;
        if b == b'\\' {
            out.write_all(b"\\\\")?;
        } else {
            out.write_all(&[b'\\', b'x', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]])?;
        }
        start = i + 1;
    }
    out.write_all(&s[start..])
}

/// Writes one field, escaped as the module describes.
#[inline]
fn field(out: &mut impl Write, s: &[u8], end_key: bool) -> io::Result<()> {
    if s.is_empty() {
        return out.write_all(b"\\e");
    }
    let digits_only = end_key && s.iter().all(u8::is_ascii_digit);
    if !digits_only && all_plain(s) {
        out.write_all(s)
    } else {
        write_escaped(out, s, digits_only)
    }
}

/// Writes `op` as one line. `Skip` writes nothing.
#[inline]
pub fn write_op(out: &mut impl Write, op: &Op<'_>) -> io::Result<()> {
    write_op_with(out, op, false)
}

/// Like [`write_op`]; `val_plain` vouches that the value needs no escaping (values
/// sliced from a pool of letters and digits), which skips scanning it.
// Always inlined: `kvmark gen` calls it from more than one loop, and left to itself the
// compiler then stops inlining it, which costs gen about 3% more instructions per line.
#[inline(always)]
pub fn write_op_with(out: &mut impl Write, op: &Op<'_>, val_plain: bool) -> io::Result<()> {
    let (tag, a, b): (&[u8], &[u8], Option<&[u8]>) = match *op {
        Op::Insert { key, val } => (b"I ", key, Some(val)),
        Op::Update { key, val } => (b"U ", key, Some(val)),
        Op::Merge { key, val } => (b"M ", key, Some(val)),
        Op::ReadModifyWrite { key, val } => (b"W ", key, Some(val)),
        Op::Get { key } => (b"P ", key, None),
        Op::Delete { key } => (b"D ", key, None),
        Op::Scan { lo, hi: Some(hi), .. } => {
            out.write_all(b"S ")?;
            field(out, lo, false)?;
            out.write_all(b" ")?;
            field(out, hi, true)?;
            return out.write_all(b"\n");
        }
        Op::Scan { lo, hi: None, limit } => {
            out.write_all(b"S ")?;
            field(out, lo, false)?;
            return writeln!(out, " {limit}");
        }
        Op::DeleteRange { lo, hi } => {
            out.write_all(b"R ")?;
            field(out, lo, false)?;
            out.write_all(b" ")?;
            field(out, hi, true)?;
            return out.write_all(b"\n");
        }
        Op::Skip => return Ok(()),
    };
    out.write_all(tag)?;
    field(out, a, false)?;
    if let Some(b) = b {
        out.write_all(b" ")?;
        if val_plain && !b.is_empty() {
            debug_assert!(all_plain(b));
            out.write_all(b)?;
        } else {
            field(out, b, false)?;
        }
    }
    out.write_all(b"\n")
}

/// Writes a phase marker line.
pub fn write_phase(out: &mut impl Write, name: &str) -> io::Result<()> {
    writeln!(out, "# phase {}", name.replace(['\n', '\r'], " "))
}

/// What a parsed line holds; the bytes are in the [`Line`]'s buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// Blank line or comment.
    Blank,
    /// A phase marker; the name is in [`Line::name`].
    Phase,
    /// An insert.
    Insert,
    /// An update.
    Update,
    /// A merge.
    Merge,
    /// A read-modify-write.
    ReadModifyWrite,
    /// A point query.
    Get,
    /// A point delete.
    Delete,
    /// A scan of at most this many rows.
    ScanCount(u64),
    /// A scan to an end key.
    ScanRange,
    /// A range delete.
    DeleteRange,
}

/// The space-separated fields of a line, as `split(|&b| b == b' ')` gives them, found
/// with memchr (the closure per byte cost a replayed operation about 300 instructions).
struct Fields<'a> {
    rest: &'a [u8],
    done: bool,
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.done {
            return None;
        }
        let rest = self.rest;
        match memchr::memchr(b' ', rest) {
            Some(i) => {
                self.rest = &rest[i + 1..];
                Some(&rest[..i])
            }
            None => {
                self.done = true;
                Some(rest)
            }
        }
    }
}

/// Reusable buffers for parsing lines without allocating per line.
#[derive(Debug, Default)]
pub struct Line {
    /// First field (key, or range start).
    pub key: Vec<u8>,
    /// Second field (value, or range end).
    pub val: Vec<u8>,
    /// Phase name of a marker.
    pub name: String,
}

impl Line {
    /// Parses one line (without its newline) into the buffers.
    pub fn parse(&mut self, line: &[u8]) -> Result<Entry, String> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Ok(Entry::Blank);
        }
        if line[0] == b'#' {
            if let Some(name) = line.strip_prefix(b"# phase ") {
                self.name = String::from_utf8_lossy(name).trim().to_string();
                return Ok(Entry::Phase);
            }
            return Ok(Entry::Blank);
        }
        let mut fields = Fields {
            rest: line,
            done: false,
        };
        let tag = fields.next().unwrap_or_default();
        let mut take = |what: &str, out: &mut Vec<u8>| -> Result<(), String> {
            let f = fields.next().ok_or_else(|| format!("missing {what}"))?;
            unescape(f, out).map_err(|e| format!("{what}: {e}"))
        };
        let entry = match tag {
            b"I" | b"U" | b"M" | b"W" => {
                take("key", &mut self.key)?;
                take("value", &mut self.val)?;
                match tag {
                    b"I" => Entry::Insert,
                    b"U" => Entry::Update,
                    b"M" => Entry::Merge,
                    _ => Entry::ReadModifyWrite,
                }
            }
            b"P" | b"D" => {
                take("key", &mut self.key)?;
                if tag == b"P" { Entry::Get } else { Entry::Delete }
            }
            b"S" | b"R" => {
                take("start key", &mut self.key)?;
                let end = fields.next().ok_or("missing end key or row count")?;
                if !end.is_empty() && end.iter().all(u8::is_ascii_digit) {
                    let n = std::str::from_utf8(end)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or("row count out of range")?;
                    if tag == b"R" {
                        return Err("a range delete by row count needs a read to find its end key, which \
                                    kvmark does not add; write it as R start end"
                            .into());
                    }
                    Entry::ScanCount(n)
                } else {
                    unescape(end, &mut self.val).map_err(|e| format!("end key: {e}"))?;
                    if tag == b"S" {
                        Entry::ScanRange
                    } else {
                        Entry::DeleteRange
                    }
                }
            }
            other => {
                return Err(format!(
                    "unknown operation '{}' (expected I, U, M, W, P, D, S or R)",
                    String::from_utf8_lossy(other)
                ));
            }
        };
        if fields.next().is_some() {
            return Err("too many fields (spaces inside keys and values must be escaped as \\x20)".into());
        }
        Ok(entry)
    }

    /// The operation of a parsed entry (None for blanks and phase markers).
    pub fn op(&self, entry: Entry) -> Option<Op<'_>> {
        let (key, val) = (self.key.as_slice(), self.val.as_slice());
        Some(match entry {
            Entry::Blank | Entry::Phase => return None,
            Entry::Insert => Op::Insert { key, val },
            Entry::Update => Op::Update { key, val },
            Entry::Merge => Op::Merge { key, val },
            Entry::ReadModifyWrite => Op::ReadModifyWrite { key, val },
            Entry::Get => Op::Get { key },
            Entry::Delete => Op::Delete { key },
            Entry::ScanCount(limit) => Op::Scan {
                lo: key,
                hi: None,
                limit,
            },
            Entry::ScanRange => Op::Scan {
                lo: key,
                hi: Some(val),
                limit: 0,
            },
            Entry::DeleteRange => Op::DeleteRange { lo: key, hi: val },
        })
    }
}

/// Decodes one escaped field into `out` (cleared first).
///
/// Runs of plain bytes are found with memchr and copied whole: a replayed operation
/// spent most of its harness cost here when every byte was pushed one at a time
/// (measured with bench/callgrind.sh's oplog path).
pub fn unescape(f: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    if f.is_empty() {
        return Err("empty field (write an empty key or value as \\e)".into());
    }
    if f == b"\\e" {
        return Ok(());
    }
    let mut rest = f;
    loop {
        let plain = memchr::memchr(b'\\', rest).unwrap_or(rest.len());
        let run = &rest[..plain];
        // A control byte is always written escaped: raw, it is a damaged log. Checked
        // without an early exit, so the compiler can check many bytes at once.
        if run.iter().fold(false, |bad, &b| bad | (b < b' ') | (b == 0x7f)) {
            let b = run
                .iter()
                .find(|&&b| b < b' ' || b == 0x7f)
                .copied()
                .unwrap_or_default();
            return Err(format!("a raw control byte 0x{b:02x} (write it as \\x{b:02x})"));
        }
        out.extend_from_slice(run);
        rest = &rest[plain..];
        if rest.is_empty() {
            return Ok(());
        }
        match rest.get(1) {
            Some(b'\\') => {
                out.push(b'\\');
                rest = &rest[2..];
            }
            Some(b'x') => {
                let hex = rest.get(2..4).ok_or("truncated \\x escape")?;
                // Two hex digits exactly (from_str_radix alone takes "+f").
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return Err(format!("bad \\x escape '\\x{}'", String::from_utf8_lossy(hex)));
                }
                let s = std::str::from_utf8(hex).map_err(|_| "bad \\x escape")?;
                out.push(u8::from_str_radix(s, 16).map_err(|_| format!("bad \\x escape '\\x{s}'"))?);
                rest = &rest[4..];
            }
            _ => return Err("bad escape (use \\\\, \\xHH, or \\e for an empty field)".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(op: Op<'_>) {
        let mut buf = Vec::new();
        write_op(&mut buf, &op).unwrap();
        assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 1, "{buf:?}");
        let mut line = Line::default();
        let entry = line.parse(&buf[..buf.len() - 1]).unwrap();
        assert_eq!(line.op(entry), Some(op), "{}", String::from_utf8_lossy(&buf));
    }

    #[test]
    fn every_byte_survives_a_line() {
        let all: Vec<u8> = (0..=255).collect();
        round_trip(Op::Insert { key: b"k 1", val: &all });
        round_trip(Op::Update { key: b"\\", val: b"" });
        round_trip(Op::Merge {
            key: b"a\nb",
            val: b"\r",
        });
        round_trip(Op::ReadModifyWrite { key: b"x", val: b"y" });
        round_trip(Op::Get { key: b"#not a comment" });
        round_trip(Op::Delete { key: b"\xff" });
        round_trip(Op::Scan {
            lo: b"a",
            hi: Some(b"123"),
            limit: 0,
        });
        round_trip(Op::Scan {
            lo: b"123",
            hi: None,
            limit: 100,
        });
        round_trip(Op::DeleteRange { lo: b"", hi: b"9" });
    }

    #[test]
    fn format_matches_tectonic_lines() {
        let mut buf = Vec::new();
        write_op(
            &mut buf,
            &Op::Insert {
                key: b"user1",
                val: b"abc",
            },
        )
        .unwrap();
        write_op(&mut buf, &Op::Get { key: b"user1" }).unwrap();
        write_op(
            &mut buf,
            &Op::Scan {
                lo: b"a",
                hi: None,
                limit: 7,
            },
        )
        .unwrap();
        write_op(&mut buf, &Op::Skip).unwrap();
        assert_eq!(buf, b"I user1 abc\nP user1\nS a 7\n");
    }

    #[test]
    fn bad_lines_say_why() {
        let mut l = Line::default();
        assert!(l.parse(b"X a").unwrap_err().contains("unknown operation"));
        assert!(l.parse(b"I a").unwrap_err().contains("missing value"));
        assert!(l.parse(b"P a b").unwrap_err().contains("too many fields"));
        assert!(l.parse(b"P a\\q").unwrap_err().contains("bad escape"));
        assert!(l.parse(b"R a 10").unwrap_err().contains("row count"));
        assert_eq!(l.parse(b"# phase load").unwrap(), Entry::Phase);
        assert_eq!(l.name, "load");
        assert_eq!(l.parse(b"# anything").unwrap(), Entry::Blank);
        assert!(l.parse(b"P a\\x2").unwrap_err().contains("truncated"));
        assert!(l.parse(b"P a\\xzz").unwrap_err().contains("bad \\x escape"));
        assert!(l.parse(b"P ab\\x7fc\\x01").is_ok());
        let raw = l.parse(b"P ab\\\\c\td").unwrap_err();
        assert!(raw.contains("raw control byte 0x09"), "{raw}");
        assert!(l.parse(b"P a ").unwrap_err().contains("too many fields"));
        assert!(l.parse(b"I a  v").unwrap_err().contains("empty field"));
    }

    #[test]
    fn escapes_between_plain_runs_decode() {
        let mut l = Line::default();
        let e = l.parse(b"I ab\\x20cd\\\\ef\\x00 \\e").unwrap();
        assert_eq!(e, Entry::Insert);
        assert_eq!(l.key, b"ab cd\\ef\0");
        assert_eq!(l.val, b"");
    }
}
