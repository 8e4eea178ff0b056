//! The reusable buffers a range and a multi-get return their results in: [`Rows`] and
//! [`Values`].

use super::ReadBuf;

/// Rows returned by a range: one reusable flat buffer, so a range allocates nothing
/// once the buffer has grown to the workload's typical result size.
#[derive(Debug, Default)]
pub struct Rows {
    data: ReadBuf,
    // (key start, key len, value len); the value follows its key in `data`.
    spans: Vec<(usize, usize, usize)>,
}

impl Rows {
    /// Empties the buffer, keeping its capacity.
    pub fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
    }

    /// Appends one row.
    pub fn push(&mut self, key: &[u8], val: &[u8]) {
        let start = self.data.len();
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(val);
        self.spans.push((start, key.len(), val.len()));
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Row `i` as (key, value).
    pub fn get(&self, i: usize) -> (&[u8], &[u8]) {
        let (start, klen, vlen) = self.spans[i];
        (
            &self.data[start..start + klen],
            &self.data[start + klen..start + klen + vlen],
        )
    }

    /// Iterates the rows in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// Values returned by a multi-get, in key order, with holes for misses.
#[derive(Debug, Default)]
pub struct Values {
    data: ReadBuf,
    // None for a miss, else (start, len) in `data`.
    spans: Vec<Option<(usize, usize)>>,
}

impl Values {
    /// Empties the buffer, keeping its capacity.
    pub fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
    }

    /// Appends a hit.
    pub fn push_hit(&mut self, val: &[u8]) {
        let start = self.data.len();
        self.data.extend_from_slice(val);
        self.spans.push(Some((start, val.len())));
    }

    /// Appends a miss.
    pub fn push_miss(&mut self) {
        self.spans.push(None);
    }

    /// Number of entries (hits and misses).
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Entry `i`: the value, or None for a miss.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.spans[i].map(|(start, len)| &self.data[start..start + len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip() {
        let mut rows = Rows::default();
        rows.push(b"a", b"1");
        rows.push(b"", b"");
        rows.push(b"\x00\xff", b"xyz");
        assert_eq!(rows.len(), 3);
        assert_eq!(rows.get(0), (&b"a"[..], &b"1"[..]));
        assert_eq!(rows.get(1), (&b""[..], &b""[..]));
        assert_eq!(rows.get(2), (&b"\x00\xff"[..], &b"xyz"[..]));
        rows.clear();
        assert!(rows.is_empty());
    }

    #[test]
    fn values_keep_holes() {
        let mut vals = Values::default();
        vals.push_hit(b"x");
        vals.push_miss();
        vals.push_hit(b"");
        assert_eq!(vals.get(0), Some(&b"x"[..]));
        assert_eq!(vals.get(1), None);
        assert_eq!(vals.get(2), Some(&b""[..]));
    }
}
