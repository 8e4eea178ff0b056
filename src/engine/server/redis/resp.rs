//! RESP2, the Redis protocol, on the measured request path: commands are encoded
//! straight into a connection's write buffer and replies are delimited and read in
//! place, with no allocation per request (the `redis` crate's `Cmd` and `Value` cost
//! a vector per command and a tree per reply; they stay for the rarer verbs and for
//! connection set-up).

/// Appends the header of a command of `args` arguments.
pub fn array(w: &mut Vec<u8>, args: usize) {
    header(w, b'*', args);
}

/// Appends one bulk-string argument made of `parts` back to back (a key prefix and a
/// key, without joining them first).
pub fn bulk(w: &mut Vec<u8>, parts: &[&[u8]]) {
    let len = parts.iter().map(|p| p.len()).sum();
    // One reservation for the whole argument, so the copies below never grow `w`.
    w.reserve(len + 24);
    header(w, b'$', len);
    for p in parts {
        w.extend_from_slice(p);
    }
    w.extend_from_slice(b"\r\n");
}

/// Appends `KIND N CRLF`. Lengths below 10^4 (nearly all) are written byte by byte:
/// a copy of a few bytes costs more than the pushes (the caller reserved room).
fn header(w: &mut Vec<u8>, kind: u8, n: usize) {
    w.push(kind);
    if n < 10 {
        w.push(b'0' + n as u8);
    } else if n < 100 {
        w.push(b'0' + (n / 10) as u8);
        w.push(b'0' + (n % 10) as u8);
    } else if n < 1000 {
        w.push(b'0' + (n / 100) as u8);
        w.push(b'0' + (n / 10 % 10) as u8);
        w.push(b'0' + (n % 10) as u8);
    } else if n < 10_000 {
        w.push(b'0' + (n / 1000) as u8);
        w.push(b'0' + (n / 100 % 10) as u8);
        w.push(b'0' + (n / 10 % 10) as u8);
        w.push(b'0' + (n % 10) as u8);
    } else {
        w.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    }
    w.push(b'\r');
    w.push(b'\n');
}

/// The first element of a reply, as read from the front of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// `+OK`
    Simple(&'a [u8]),
    /// `-ERR ...`: the server refused the command.
    Error(&'a [u8]),
    /// `:N`
    Int(i64),
    /// `$N` and its bytes; None for the null bulk string (`$-1`).
    Bulk(Option<&'a [u8]>),
    /// `*N`: the header of an array whose N items follow; None for a null array.
    Array(Option<usize>),
}

/// A reply that is not RESP2: the connection cannot be read any further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

/// Reads one item from the front of `buf`: the item and the bytes it takes (an
/// array's header only), or None while `buf` does not hold all of it yet.
pub fn item(buf: &[u8]) -> Result<Option<(Item<'_>, usize)>, Malformed> {
    let Some(&kind) = buf.first() else { return Ok(None) };
    let Some(cr) = find_cr(buf) else {
        return Ok(None);
    };
    if buf.len() < cr + 2 {
        return Ok(None);
    }
    if buf[cr + 1] != b'\n' {
        return Err(Malformed("a line of the reply does not end in CRLF".into()));
    }
    let line = &buf[1..cr];
    let head = cr + 2;
    Ok(Some(match kind {
        b'+' => (Item::Simple(line), head),
        b'-' => (Item::Error(line), head),
        b':' => (Item::Int(number(line)?), head),
        b'$' => match number(line)? {
            -1 => (Item::Bulk(None), head),
            n if n < 0 => return Err(Malformed(format!("a bulk string of length {n}"))),
            n => {
                let end = head + n as usize;
                if buf.len() < end + 2 {
                    return Ok(None);
                }
                if &buf[end..end + 2] != b"\r\n" {
                    return Err(Malformed("a bulk string does not end in CRLF".into()));
                }
                (Item::Bulk(Some(&buf[head..end])), end + 2)
            }
        },
        b'*' => match number(line)? {
            -1 => (Item::Array(None), head),
            n if n < 0 => return Err(Malformed(format!("an array of length {n}"))),
            n => (Item::Array(Some(n as usize)), head),
        },
        other => {
            return Err(Malformed(format!(
                "a reply starting with {:?}, which RESP2 does not have",
                other as char
            )));
        }
    }))
}

/// Where the first CR of `buf` is. Reply lines are short (`+OK`, `$100`), for which a
/// plain scan beats setting up `memchr`'s vector search.
fn find_cr(buf: &[u8]) -> Option<usize> {
    let head = &buf[..buf.len().min(16)];
    match head.iter().position(|&b| b == b'\r') {
        Some(at) => Some(at),
        None if buf.len() > 16 => memchr::memchr(b'\r', &buf[16..]).map(|at| at + 16),
        None => None,
    }
}

/// The length of the first whole reply at the front of `buf` (an array with all its
/// items), or None while it is not all there.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, Malformed> {
    let mut pos = 0;
    let mut pending = 1usize;
    while pending > 0 {
        let Some((item, len)) = item(&buf[pos..])? else {
            return Ok(None);
        };
        pos += len;
        pending -= 1;
        if let Item::Array(Some(n)) = item {
            pending += n;
        }
    }
    Ok(Some(pos))
}

fn number(line: &[u8]) -> Result<i64, Malformed> {
    let (negative, digits) = match line.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, line),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(Malformed(format!(
            "{:?} where a number was expected",
            String::from_utf8_lossy(line)
        )));
    }
    let n = digits.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    Ok(if negative { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_encoded_as_an_array_of_bulk_strings() {
        let mut w = Vec::new();
        array(&mut w, 3);
        bulk(&mut w, &[b"SET"]);
        bulk(&mut w, &[b"ns:", b"key"]);
        bulk(&mut w, &[b""]);
        assert_eq!(w, b"*3\r\n$3\r\nSET\r\n$6\r\nns:key\r\n$0\r\n\r\n");
        for n in [0usize, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 123_456_789] {
            let mut w = Vec::new();
            array(&mut w, n);
            assert_eq!(w, format!("*{n}\r\n").into_bytes());
        }
    }

    #[test]
    fn items_are_read_in_place_and_incomplete_ones_wait() {
        assert_eq!(item(b"+OK\r\n").unwrap(), Some((Item::Simple(b"OK"), 5)));
        assert_eq!(item(b"-ERR no\r\n").unwrap(), Some((Item::Error(b"ERR no"), 9)));
        assert_eq!(item(b":-42\r\n").unwrap(), Some((Item::Int(-42), 6)));
        assert_eq!(item(b"$-1\r\n").unwrap(), Some((Item::Bulk(None), 5)));
        assert_eq!(item(b"$3\r\na\r\n\r\n").unwrap(), Some((Item::Bulk(Some(b"a\r\n")), 9)));
        assert_eq!(item(b"*2\r\n").unwrap(), Some((Item::Array(Some(2)), 4)));
        let long = format!("+{}\r\n", "y".repeat(40));
        assert_eq!(
            item(long.as_bytes()).unwrap(),
            Some((Item::Simple(&long.as_bytes()[1..41]), 43))
        );
        for partial in [&b""[..], b"+OK", b"+OK\r", b"$3\r\nab", b"$3\r\nabc\r"] {
            assert_eq!(item(partial).unwrap(), None, "{partial:?}");
        }
    }

    #[test]
    fn a_frame_spans_an_array_with_every_item() {
        let reply = b"*3\r\n$1\r\na\r\n$-1\r\n*1\r\n:7\r\n+OK\r\n";
        assert_eq!(frame_len(reply).unwrap(), Some(reply.len() - 5));
        assert_eq!(frame_len(&reply[..12]).unwrap(), None);
        assert_eq!(frame_len(b"*0\r\n").unwrap(), Some(4));
    }

    #[test]
    fn what_is_not_resp2_is_refused() {
        for bad in [
            &b"%1\r\n"[..],
            b"$x\r\n",
            b"$-2\r\n",
            b"+OK\rX",
            b"$1\r\nab\r\n",
            b":\r\n",
        ] {
            assert!(item(bad).is_err(), "{bad:?}");
        }
    }
}
