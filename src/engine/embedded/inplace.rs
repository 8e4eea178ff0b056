//! What the engines whose libraries hand each record to a callback inside their own
//! locks share (Kyoto Cabinet's visitors, Tkrzw's record processors): the row a
//! cursor step sees, the walks of `range`, `scan` and `delete_range` built on such
//! steps, and the growth of a value by `append` with its cap check. The engines keep
//! only the `extern "C"` callbacks their libraries' signatures need.

use libc::c_char;

use crate::engine::{EngineResult, ReadBuf, Rows, ScanFn, fits_cap};

/// A pointer to hand such a library. An empty slice's pointer may be the address 1,
/// which Kyoto Cabinet reads as its "remove the record" marker: an empty slice gets the
/// address of a static empty string instead.
pub fn cbytes(bytes: &[u8]) -> *const c_char {
    if bytes.is_empty() {
        return c"".as_ptr();
    }
    bytes.as_ptr().cast::<c_char>()
}

/// What one cursor step saw; `past` once it met a key at or past the walk's end.
pub struct Row<'a> {
    hi: &'a [u8],
    /// Set when the record's key is at or past `hi` (nothing was taken from it).
    pub past: bool,
    sink: Sink<'a>,
}

/// Where a step puts a record below `hi`.
enum Sink<'a> {
    /// Appended to a range's rows.
    Rows(&'a mut Rows),
    /// Copied out, for a scan's callback to run outside the library's locks.
    Copy(&'a mut ReadBuf, &'a mut ReadBuf),
    /// Only looked at (`delete_range`).
    KeyOnly,
}

impl Row<'_> {
    /// Called by the library's callback with the record, in place.
    pub fn see(&mut self, key: &[u8], val: &[u8]) {
        if key >= self.hi {
            self.past = true;
            return;
        }
        match &mut self.sink {
            Sink::Rows(rows) => rows.push(key, val),
            Sink::Copy(k, v) => {
                k.set(key);
                v.set(val);
            }
            Sink::KeyOnly => {}
        }
    }
}

/// A cursor step: the engine positions on the next record (the first time, the one the
/// cursor was jumped to) and hands it to `Row::see`; false past the last record.
pub type Step<'s> = dyn FnMut(&mut Row<'_>) -> EngineResult<bool> + 's;

/// `range` over steps: rows below `hi` into `out`, at most `limit` (0: no limit).
pub fn range(out: &mut Rows, hi: &[u8], limit: usize, step: &mut Step<'_>) -> EngineResult<()> {
    let mut row = Row {
        hi,
        past: false,
        sink: Sink::Rows(out),
    };
    let mut rows = 0usize;
    while step(&mut row)? && !row.past {
        rows += 1;
        if rows == limit {
            break;
        }
    }
    Ok(())
}

/// `scan` over steps: each row is copied into `key` and `val` inside the step and handed
/// to `f` after it, outside the library's locks.
pub fn scan(
    key: &mut ReadBuf,
    val: &mut ReadBuf,
    hi: &[u8],
    limit: usize,
    f: &mut ScanFn<'_>,
    step: &mut Step<'_>,
) -> EngineResult<usize> {
    let mut rows = 0usize;
    loop {
        let mut row = Row {
            hi,
            past: false,
            sink: Sink::Copy(key, val),
        };
        if !step(&mut row)? || row.past {
            return Ok(rows);
        }
        rows += 1;
        if f(key, val) || rows == limit {
            return Ok(rows);
        }
    }
}

/// `delete_range` over a step that stays on the record (`look`) and a removal that
/// moves the cursor to the next record (false past the last).
pub fn delete(hi: &[u8], look: &mut Step<'_>, remove: &mut dyn FnMut() -> EngineResult<bool>) -> EngineResult<()> {
    loop {
        let mut row = Row {
            hi,
            past: false,
            sink: Sink::KeyOnly,
        };
        if !look(&mut row)? || row.past || !remove()? {
            return Ok(());
        }
    }
}

/// An append as a library's update callback sees it: the suffix, the store's cap, and
/// the session's buffer the grown value is built in (the library copies it before its
/// call returns).
pub struct Grow<'a> {
    suffix: &'a [u8],
    cap: Option<u64>,
    grown: &'a mut Vec<u8>,
    /// Set when the cap left the record as it was.
    pub skipped: bool,
}

impl<'a> Grow<'a> {
    /// An append of `suffix` under `cap`, built in `grown`.
    pub fn new(suffix: &'a [u8], cap: Option<u64>, grown: &'a mut Vec<u8>) -> Self {
        Grow {
            suffix,
            cap,
            grown,
            skipped: false,
        }
    }

    /// The new value for the current one (None: the record is missing, whose new value
    /// is the suffix, checked against the cap before the call), or None when the cap
    /// would be passed and the record is to stay as it is.
    pub fn value(&mut self, current: Option<&[u8]>) -> Option<&[u8]> {
        self.grown.clear();
        if let Some(old) = current {
            if !fits_cap(self.cap, old.len(), self.suffix.len()) {
                self.skipped = true;
                return None;
            }
            self.grown.extend_from_slice(old);
        }
        self.grown.extend_from_slice(self.suffix);
        Some(self.grown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_stop_at_the_end_key_and_the_limit() {
        let data: Vec<(&[u8], &[u8])> = vec![(b"a", b"1"), (b"b", b"2"), (b"c", b"3")];
        let stepper = |from: usize| {
            let mut i = from;
            let data = data.clone();
            move |row: &mut Row<'_>| {
                let Some((k, v)) = data.get(i) else { return Ok(false) };
                row.see(k, v);
                i += 1;
                Ok(true)
            }
        };
        let mut rows = Rows::default();
        range(&mut rows, b"c", 0, &mut stepper(0)).unwrap();
        assert_eq!(rows.len(), 2);
        range(&mut rows, b"z", 1, &mut stepper(0)).unwrap();
        assert_eq!(rows.len(), 3, "one more row, appended (clearing is the engine's)");
        let (mut k, mut v) = (ReadBuf::new(), ReadBuf::new());
        let mut seen = Vec::new();
        let n = scan(
            &mut k,
            &mut v,
            b"z",
            0,
            &mut |k, _| {
                seen.push(k.to_vec());
                false
            },
            &mut stepper(1),
        )
        .unwrap();
        assert_eq!((n, seen), (2, vec![b"b".to_vec(), b"c".to_vec()]));
        let mut removed = 0;
        delete(b"c", &mut stepper(0), &mut || {
            removed += 1;
            Ok(true)
        })
        .unwrap();
        assert_eq!(removed, 2, "a and b, not c");
    }

    #[test]
    fn growth_respects_the_cap_and_empty_slices_get_a_real_address() {
        let mut buf = Vec::new();
        let mut g = Grow::new(b"cd", Some(4), &mut buf);
        assert_eq!(g.value(None), Some(&b"cd"[..]));
        assert_eq!(g.value(Some(b"ab")), Some(&b"abcd"[..]));
        assert_eq!(g.value(Some(b"abc")), None);
        assert!(g.skipped);
        assert!(cbytes(b"") as usize > 1);
    }
}
