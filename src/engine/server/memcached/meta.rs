//! memcached's meta protocol, the part the engine speaks: requests encoded straight
//! into a connection's write buffer (`mg`, `ms`, `md`, `mn`, `stats`, `lru_crawler
//! metadump`), replies cut into frames for the shared pipe ([`Meta`]) and read in
//! place ([`reply`]).
//!
//! Keys go on the wire as they are when every byte is printable ASCII (0x21 to 0x7E),
//! and otherwise base64-encoded with the `b` flag, which the server decodes, so a key
//! is stored as the same bytes either way. The server takes at most [`MAX_WIRE_KEY`]
//! bytes of key on the wire (base64 included); a longer one would make it read the
//! request's data as a command, so the engine refuses it before sending.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::engine::server::pipe::Framing;

/// The longest key memcached takes on the wire (its `KEY_MAX_LENGTH`), base64 form
/// included.
pub const MAX_WIRE_KEY: usize = 250;

/// The meta protocol's frames, for the shared pipe.
pub struct Meta;

impl Framing for Meta {
    const PROTOCOL: &'static str = "memcached's meta protocol";

    #[inline]
    fn frame_len(buf: &[u8]) -> Result<Option<usize>, String> {
        frame_len(buf)
    }
}

/// The length of the reply frame at the start of `buf` (None while it is not all
/// there): one line (`HD`, `EN`, `NF`, `NS`, `EX`, `MN`, an error), a value (`VA
/// <len> <flags>` and its data), or a listing (`STAT` or `key=` lines up to `END`).
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, String> {
    if buf.starts_with(b"STAT ") || buf.starts_with(b"key=") {
        // A listing: its lines (metadump's end in a bare LF) up to the END line.
        return Ok(memchr::memmem::find(buf, b"\nEND\r\n").map(|at| at + 6));
    }
    let Some(lf) = memchr::memchr(b'\n', buf) else {
        return Ok(None);
    };
    if lf == 0 || buf[lf - 1] != b'\r' {
        return Err("a line of the reply does not end in CRLF".into());
    }
    let after = lf + 1;
    let Some(head) = buf.strip_prefix(b"VA ") else {
        return Ok(Some(after));
    };
    let len = number(first_token(&head[..lf - 1 - 3])).ok_or("a VA line without a length")?;
    let total = after
        .checked_add(len)
        .and_then(|t| t.checked_add(2))
        .ok_or("a value length past the address space")?;
    if buf.len() < total {
        return Ok(None);
    }
    if &buf[total - 2..total] != b"\r\n" {
        return Err("a value does not end in CRLF".into());
    }
    Ok(Some(total))
}

/// The first space-separated token of `line`.
fn first_token(line: &[u8]) -> &[u8] {
    let end = memchr::memchr(b' ', line).unwrap_or(line.len());
    &line[..end]
}

/// A decimal number made of `digits` only.
fn number(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    digits.iter().try_fold(0usize, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(usize::from(d - b'0')))
            .flatten()
    })
}

/// One reply, read in place.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply<'f> {
    /// `VA`: a hit, with its cas token when asked for (`c`).
    Value(&'f [u8], Option<u64>),
    /// `HD`: done (stored, deleted).
    Done,
    /// `EN`: a miss.
    Miss,
    /// `NF`: not found (a delete of an absent key, a cas on a gone one).
    NotFound,
    /// `NS`: not stored (an add of a present key).
    NotStored,
    /// `EX`: the cas token did not match.
    Exists,
    /// `MN`: the end of a batch.
    NoOp,
    /// Anything else: an error or a reply of the wrong kind, the whole line.
    Other(&'f [u8]),
}

/// The reply in one frame.
pub fn reply(frame: &[u8]) -> Reply<'_> {
    let line_end = memchr::memchr(b'\r', frame).unwrap_or(frame.len());
    let line = &frame[..line_end];
    match line.get(..2) {
        Some(b"VA") => {
            let mut tokens = line.split(|&b| b == b' ').skip(1);
            let len = tokens.next().and_then(number);
            let cas = tokens
                .find_map(|t| t.strip_prefix(b"c"))
                .and_then(number)
                .map(|c| c as u64);
            let start = line_end + 2;
            match len {
                Some(len) if frame.len() >= start + len => Reply::Value(&frame[start..start + len], cas),
                _ => Reply::Other(line),
            }
        }
        Some(b"HD") => Reply::Done,
        Some(b"EN") if line.len() == 2 => Reply::Miss,
        Some(b"NF") => Reply::NotFound,
        Some(b"NS") => Reply::NotStored,
        Some(b"EX") => Reply::Exists,
        Some(b"MN") => Reply::NoOp,
        _ => Reply::Other(line),
    }
}

/// True when `key` goes on the wire as it is (every byte printable ASCII).
#[inline]
fn printable(key: &[u8]) -> bool {
    key.iter().all(|&b| (0x21..=0x7E).contains(&b))
}

/// How long `prefix + key` is on the wire (base64 when `key` is not printable).
#[inline]
pub fn wire_key_len(prefix: &[u8], key: &[u8]) -> usize {
    let n = prefix.len() + key.len();
    match printable(key) {
        true => n,
        false => n.div_ceil(3) * 4,
    }
}

/// Writes `prefix + key` as the server should read it: as it is, or base64 (built in
/// `scratch`); true for base64, whose request must carry the `b` flag (after the key,
/// or for `ms` after its length, which comes first).
#[inline]
fn put_key(w: &mut Vec<u8>, prefix: &[u8], key: &[u8], scratch: &mut Vec<u8>) -> bool {
    if printable(key) {
        w.extend_from_slice(prefix);
        w.extend_from_slice(key);
        return false;
    }
    scratch.clear();
    scratch.extend_from_slice(prefix);
    scratch.extend_from_slice(key);
    let at = w.len();
    w.resize(at + scratch.len().div_ceil(3) * 4, 0);
    let written = STANDARD
        .encode_slice(&scratch[..], &mut w[at..])
        .expect("the buffer was sized for the encoding");
    w.truncate(at + written);
    true
}

/// The `b` flag when the key went as base64.
#[inline]
fn base64_flag(w: &mut Vec<u8>, base64: bool) {
    if base64 {
        w.extend_from_slice(b" b");
    }
}

/// `mg KEY v [c]`: the value, and its cas token when `cas`.
#[inline]
pub fn mg(w: &mut Vec<u8>, prefix: &[u8], key: &[u8], cas: bool, scratch: &mut Vec<u8>) {
    w.extend_from_slice(b"mg ");
    let base64 = put_key(w, prefix, key, scratch);
    base64_flag(w, base64);
    w.extend_from_slice(if cas { b" v c\r\n" } else { b" v\r\n" });
}

/// When an `ms` stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Always (`set`).
    Always,
    /// Only when the key holds the value whose cas token this is (`C<token>`).
    IfCas(u64),
    /// Only when the key is absent (`ME`, add).
    IfAbsent,
}

/// `ms KEY LEN [flags]` and the value.
#[inline]
pub fn ms(w: &mut Vec<u8>, prefix: &[u8], key: &[u8], val: &[u8], when: Condition, scratch: &mut Vec<u8>) {
    let mut digits = itoa::Buffer::new();
    w.extend_from_slice(b"ms ");
    let base64 = put_key(w, prefix, key, scratch);
    w.push(b' ');
    w.extend_from_slice(digits.format(val.len()).as_bytes());
    base64_flag(w, base64);
    match when {
        Condition::Always => {}
        Condition::IfCas(token) => {
            w.extend_from_slice(b" C");
            w.extend_from_slice(digits.format(token).as_bytes());
        }
        Condition::IfAbsent => w.extend_from_slice(b" ME"),
    }
    w.extend_from_slice(b"\r\n");
    w.extend_from_slice(val);
    w.extend_from_slice(b"\r\n");
}

/// `md KEY`.
#[inline]
pub fn md(w: &mut Vec<u8>, prefix: &[u8], key: &[u8], scratch: &mut Vec<u8>) {
    w.extend_from_slice(b"md ");
    let base64 = put_key(w, prefix, key, scratch);
    base64_flag(w, base64);
    w.extend_from_slice(b"\r\n");
}

/// The keys of a `lru_crawler metadump` listing that start with `prefix`, decoded
/// from the listing's percent-encoding.
pub fn dumped_keys(listing: &[u8], prefix: &[u8]) -> Vec<Vec<u8>> {
    listing
        .split(|&b| b == b'\n')
        .filter_map(|line| line.strip_prefix(b"key="))
        .map(|rest| percent_decoded(first_token(rest)))
        .filter(|key| key.starts_with(prefix))
        .collect()
}

/// `text` with each `%XX` made the byte it encodes.
fn percent_decoded(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            text[i],
            text.get(i + 1).copied().and_then(hex),
            text.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// The numeric fields of a `stats` listing, by name.
pub fn stat_fields(listing: &[u8]) -> impl Iterator<Item = (&str, f64)> {
    listing.split(|&b| b == b'\n').filter_map(|line| {
        let line = std::str::from_utf8(line.strip_prefix(b"STAT ")?).ok()?;
        let (name, value) = line.trim_end().split_once(' ')?;
        Some((name, value.parse().ok()?))
    })
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;

    #[test]
    fn frames_are_whole_lines_values_and_listings() {
        assert_eq!(frame_len(b"HD\r\nEN\r\n"), Ok(Some(4)));
        assert_eq!(frame_len(b"HD\r"), Ok(None));
        assert_eq!(frame_len(b"VA 3 c5\r\nab"), Ok(None));
        assert_eq!(frame_len(b"VA 3 c5\r\nabc\r\nHD\r\n"), Ok(Some(14)));
        assert_eq!(frame_len(b"VA 0\r\n\r\n"), Ok(Some(8)));
        assert_eq!(frame_len(b"STAT pid 1\r\nSTAT x 2\r\n"), Ok(None));
        assert_eq!(frame_len(b"STAT pid 1\r\nEND\r\nHD\r\n"), Ok(Some(17)));
        assert_eq!(frame_len(b"key=a exp=-1\nkey=b exp=-1\nEND\r\n"), Ok(Some(31)));
        assert_eq!(frame_len(b"END\r\n"), Ok(Some(5)));
        assert!(frame_len(b"HD\n").is_err());
        assert!(frame_len(b"VA x\r\n").is_err());
        assert!(frame_len(b"VA 1\r\nab\r\n").is_err());
    }

    #[test]
    fn replies_read_in_place() {
        assert_eq!(reply(b"VA 3 c77\r\nabc\r\n"), Reply::Value(b"abc", Some(77)));
        assert_eq!(reply(b"VA 0\r\n\r\n"), Reply::Value(b"", None));
        assert_eq!(reply(b"HD\r\n"), Reply::Done);
        assert_eq!(reply(b"EN\r\n"), Reply::Miss);
        assert_eq!(reply(b"NF\r\n"), Reply::NotFound);
        assert_eq!(reply(b"EX\r\n"), Reply::Exists);
        assert_eq!(reply(b"NS\r\n"), Reply::NotStored);
        assert_eq!(
            reply(b"SERVER_ERROR out of memory\r\n"),
            Reply::Other(b"SERVER_ERROR out of memory")
        );
    }

    #[test]
    fn keys_go_as_they_are_or_in_base64() {
        let mut w = Vec::new();
        let mut scratch = Vec::new();
        mg(&mut w, b"ns:", b"k1", false, &mut scratch);
        assert_eq!(w, b"mg ns:k1 v\r\n");
        w.clear();
        md(&mut w, b"ns:", b"a b\x00", &mut scratch);
        let encoded = STANDARD.encode(b"ns:a b\x00");
        assert_eq!(w, format!("md {encoded} b\r\n").into_bytes());
        assert_eq!(wire_key_len(b"ns:", b"a b\x00"), encoded.len());
        assert_eq!(wire_key_len(b"ns:", b"k1"), 5);
        w.clear();
        // The length comes right after the key; the b flag after it.
        ms(&mut w, b"ns:", b"\x00", b"xyz", Condition::Always, &mut scratch);
        let encoded = STANDARD.encode(b"ns:\x00");
        assert_eq!(w, format!("ms {encoded} 3 b\r\nxyz\r\n").into_bytes());
        w.clear();
        ms(&mut w, b"ns:", b"k", b"xyz", Condition::IfCas(42), &mut scratch);
        assert_eq!(w, b"ms ns:k 3 C42\r\nxyz\r\n");
        w.clear();
        ms(&mut w, b"ns:", b"k", b"", Condition::IfAbsent, &mut scratch);
        assert_eq!(w, b"ms ns:k 0 ME\r\n\r\n");
    }

    #[test]
    fn a_metadump_gives_the_prefixed_keys_decoded() {
        let listing = b"key=ns%3Aa%00%FF exp=-1 la=1\nkey=other exp=-1\nkey=ns%3Ab%25 exp=-1\nEND\r\n";
        assert_eq!(
            dumped_keys(listing, b"ns:"),
            vec![b"ns:a\x00\xff".to_vec(), b"ns:b%".to_vec()]
        );
    }

    #[test]
    fn stats_give_their_numbers() {
        let listing = b"STAT pid 12\r\nSTAT version 1.6.18\r\nSTAT curr_items 3\r\nEND\r\n";
        let got: Vec<(&str, f64)> = stat_fields(listing).collect();
        assert_eq!(got, vec![("pid", 12.0), ("curr_items", 3.0)]);
    }
}
