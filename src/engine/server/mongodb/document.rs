//! How a key and its value are stored: the document of one key (its `_id` the key in
//! lowercase hex, its value in BinData pieces), read back into keys and values, and the
//! filters of a range and of a set of keys.

use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{Bson, Document, RawArrayBuf, RawBinaryRef, RawDocument, RawDocumentBuf, doc, rawdoc};

use super::ENGINE;
use crate::engine::{EngineError, EngineResult};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `key` in lowercase hex, into `out`.
pub(super) fn hex_into(key: &[u8], out: &mut String) {
    out.clear();
    out.reserve(key.len() * 2);
    for &b in key {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
}

/// `key` in lowercase hex.
pub(super) fn hex(key: &[u8]) -> String {
    let mut s = String::new();
    hex_into(key, &mut s);
    s
}

/// The key a hex `_id` stands for, into `out`; None if it is not one kvmark wrote.
fn unhex_into(id: &str, out: &mut Vec<u8>) -> Option<()> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let id = id.as_bytes();
    if !id.len().is_multiple_of(2) {
        return None;
    }
    out.clear();
    for pair in id.chunks_exact(2) {
        out.push(digit(pair[0])? << 4 | digit(pair[1])?);
    }
    Some(())
}

fn bin(bytes: &[u8]) -> RawBinaryRef<'_> {
    RawBinaryRef {
        subtype: BinarySubtype::Generic,
        bytes,
    }
}

/// The document `put` writes for `key` (in hex) and `val`.
pub(super) fn document(hex: &str, val: &[u8]) -> RawDocumentBuf {
    let mut pieces = RawArrayBuf::new();
    pieces.push(bin(val));
    rawdoc! {"_id": hex, "n": val.len() as i64, "v": pieces}
}

/// A document's value: its one piece as it is, or its pieces joined in `joined`.
pub(super) fn value<'d>(op: &str, doc: &'d RawDocument, joined: &'d mut Vec<u8>) -> EngineResult<&'d [u8]> {
    let bad = |why: &dyn std::fmt::Display| {
        EngineError::other(format!(
            "engine {ENGINE}: {op}: a document kvmark did not write ({why})"
        ))
    };
    let pieces = doc.get_array("v").map_err(|e| bad(&e))?;
    let mut it = pieces.into_iter();
    let first = match it.next() {
        None => return Ok(&[]),
        Some(p) => p
            .map_err(|e| bad(&e))?
            .as_binary()
            .ok_or_else(|| bad(&"v holds a non-binary piece"))?,
    };
    let Some(second) = it.next() else {
        return Ok(first.bytes);
    };
    joined.clear();
    joined.extend_from_slice(first.bytes);
    for p in std::iter::once(second).chain(it) {
        let p = p
            .map_err(|e| bad(&e))?
            .as_binary()
            .ok_or_else(|| bad(&"v holds a non-binary piece"))?;
        joined.extend_from_slice(p.bytes);
    }
    Ok(joined)
}

/// A document's `_id` as a key, into `key`.
pub(super) fn key_of<'k>(op: &str, doc: &RawDocument, key: &'k mut Vec<u8>) -> EngineResult<&'k [u8]> {
    let id = doc.get_str("_id").ok();
    match id.and_then(|id| unhex_into(id, key)) {
        Some(()) => Ok(key),
        None => Err(EngineError::other(format!(
            "engine {ENGINE}: {op}: a document whose _id is not a hex key kvmark wrote ({:?})",
            doc.get("_id").ok().flatten()
        ))),
    }
}

/// The filter of the half-open key range [lo, hi).
pub(super) fn range_filter(lo: &[u8], hi: &[u8]) -> Document {
    doc! {"_id": {"$gte": hex(lo), "$lt": hex(hi)}}
}

/// The filter of a set of keys.
pub(super) fn keys_filter(keys: &[&[u8]]) -> Document {
    let ids: Vec<Bson> = keys.iter().map(|k| Bson::String(hex(k))).collect();
    doc! {"_id": {"$in": ids}}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ids_sort_as_their_keys_do_and_decode_back() {
        let keys: [&[u8]; 7] = [b"", b"\x00", b"\x00\x00", b"\x01", b"a", b"ab", b"\xff"];
        for w in keys.windows(2) {
            assert!(hex(w[0]) < hex(w[1]), "{:?} < {:?}", w[0], w[1]);
        }
        let mut back = Vec::new();
        for k in keys {
            unhex_into(&hex(k), &mut back).unwrap();
            assert_eq!(back, k);
        }
        assert_eq!(hex(b"\x0a\xf0"), "0af0");
        assert!(unhex_into("0g", &mut back).is_none());
        assert!(unhex_into("abc", &mut back).is_none());
        assert!(unhex_into("AB", &mut back).is_none());
    }

    #[test]
    fn values_of_several_pieces_are_joined() {
        let mut pieces = RawArrayBuf::new();
        pieces.push(bin(b"ab"));
        pieces.push(bin(b""));
        pieces.push(bin(b"cd"));
        let doc = rawdoc! {"_id": "00", "n": 4_i64, "v": pieces};
        let mut joined = Vec::new();
        assert_eq!(value("get", &doc, &mut joined).unwrap(), b"abcd");
        let one = document("00", b"xyz");
        assert_eq!(value("get", &one, &mut joined).unwrap(), b"xyz");
        let bad = rawdoc! {"_id": "00", "v": "text"};
        assert!(
            value("get", &bad, &mut joined)
                .unwrap_err()
                .message
                .contains("did not write")
        );
    }
}
