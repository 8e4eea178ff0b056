//! The tag a verified value carries in its first bytes, and reading it back.
//!
//! A value written with `--verify` keeps its length; its first [`TAG_LEN`] bytes are
//! replaced by a tag, little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | CRC-32 (IEEE) of bytes 4..len of the record (tag fields and payload) |
//! | 4..8 | the record's length, tag included |
//! | 8..12 | hash of the key it was written to |
//! | 12..20 | version: writer id (high 24 bits) and that writer's sequence (low 40) |
//!
//! An append's suffix is a record of its own, so a grown value is a chain of records:
//! the first from the put (or the first append) that made the value, then one per
//! append. The version of a value is its last record's.

/// Bytes a tag takes; values (and appended suffixes) must be at least this long.
pub const TAG_LEN: usize = 20;

/// Bits of a version that hold the writer's sequence number.
const SEQ_BITS: u32 = 40;

/// A write's identity: writer and sequence. 0 is "absent" (a delete, or a key never
/// written).
pub type Version = u64;

/// The version of nothing: a deleted or never written key.
pub const ABSENT: Version = 0;

/// The version of the `seq`-th write (from 1) of writer `writer` (from 1).
pub fn version(writer: u64, seq: u64) -> Version {
    (writer << SEQ_BITS) | (seq & ((1 << SEQ_BITS) - 1))
}

/// "w3.17" for writer 3's 17th write, "absent" for [`ABSENT`].
pub fn describe(v: Version) -> String {
    if v == ABSENT {
        "absent".to_string()
    } else {
        format!("w{}.{}", v >> SEQ_BITS, v & ((1 << SEQ_BITS) - 1))
    }
}

/// The hash a tag carries for `key`.
pub fn key_hash(key: &[u8]) -> u32 {
    crc32fast::hash(key)
}

/// Overwrites the first [`TAG_LEN`] bytes of `record` (which must be at least that
/// long) with the tag of `version` written to a key hashing to `kh`.
pub fn stamp(record: &mut [u8], kh: u32, version: Version) {
    let len = u32::try_from(record.len()).unwrap_or(u32::MAX);
    record[4..8].copy_from_slice(&len.to_le_bytes());
    record[8..12].copy_from_slice(&kh.to_le_bytes());
    record[12..20].copy_from_slice(&version.to_le_bytes());
    let sum = crc32fast::hash(&record[4..]);
    record[0..4].copy_from_slice(&sum.to_le_bytes());
}

/// What reading a tagged value found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// A whole chain of records for this key: the last one's version.
    Version(Version),
    /// A record's checksum or length does not hold: the bytes were changed.
    Corrupt,
    /// A sound record written for another key (its key hash differs).
    Foreign(u32),
}

/// Reads the chain of records in `value` written to a key hashing to `kh`.
pub fn read(value: &[u8], kh: u32) -> Read {
    let mut at = 0usize;
    let mut last = ABSENT;
    if value.is_empty() {
        return Read::Corrupt;
    }
    while at < value.len() {
        let rest = &value[at..];
        if rest.len() < TAG_LEN {
            return Read::Corrupt;
        }
        let field = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().expect("4 bytes"));
        let len = field(4) as usize;
        if len < TAG_LEN || len > rest.len() || crc32fast::hash(&rest[4..len]) != field(0) {
            return Read::Corrupt;
        }
        let owner = field(8);
        if owner != kh {
            return Read::Foreign(owner);
        }
        last = u64::from_le_bytes(rest[12..20].try_into().expect("8 bytes"));
        at += len;
    }
    Read::Version(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tagged(key: &[u8], len: usize, v: Version) -> Vec<u8> {
        let mut r = vec![7u8; len];
        stamp(&mut r, key_hash(key), v);
        r
    }

    #[test]
    fn a_stamped_value_reads_back_its_version() {
        let v = version(3, 17);
        let val = tagged(b"k", 64, v);
        assert_eq!(read(&val, key_hash(b"k")), Read::Version(v));
        assert_eq!(describe(v), "w3.17");
        assert_eq!(describe(ABSENT), "absent");
    }

    #[test]
    fn a_chain_of_appends_reads_as_its_last_record() {
        let mut val = tagged(b"k", 30, version(1, 1));
        val.extend(tagged(b"k", TAG_LEN, version(2, 5)));
        assert_eq!(read(&val, key_hash(b"k")), Read::Version(version(2, 5)));
    }

    #[test]
    fn any_flipped_byte_or_cut_is_corrupt_and_another_keys_value_is_foreign() {
        let val = tagged(b"k", 40, version(1, 1));
        for i in 0..val.len() {
            let mut bad = val.clone();
            bad[i] ^= 0x10;
            assert_eq!(read(&bad, key_hash(b"k")), Read::Corrupt, "byte {i}");
        }
        assert_eq!(read(&val[..39], key_hash(b"k")), Read::Corrupt);
        assert_eq!(read(b"", key_hash(b"k")), Read::Corrupt);
        assert_eq!(read(&val, key_hash(b"j")), Read::Foreign(key_hash(b"k")));
    }
}
