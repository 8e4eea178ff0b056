//! The text `redis-cli MONITOR` prints, one command per line:
//!
//! ```text
//! 1339518083.107412 [0 127.0.0.1:60866] "set" "foo" "bar"
//! ```
//!
//! a Unix time with microseconds, the database and the client's address in brackets,
//! then the command's arguments, each quoted, with `\\`, `\"`, `\n`, `\r`, `\t`,
//! `\a`, `\b` and `\xHH` escapes. The `OK` that redis-cli prints first is skipped.
//! Values are replayed as recorded: their bytes are in the line.

use super::{Decoded, Request, Verb};

/// Reads one line into `req`.
pub fn decode<'a>(line: &'a [u8], req: &mut Request) -> Result<Decoded<'a>, String> {
    if line.is_empty() || line == b"OK" {
        return Ok(Decoded::Blank);
    }
    let bad = |why: &str| {
        format!(
            "not a MONITOR line ({why}; expected: 1339518083.107412 [0 127.0.0.1:60866] \"get\" \"key\"): '{}'",
            String::from_utf8_lossy(&line[..line.len().min(80)])
        )
    };
    let space = memchr::memchr(b' ', line).ok_or_else(|| bad("no space after the time"))?;
    let ts_ns = time_ns(&line[..space]).ok_or_else(|| bad("the time is not SECONDS.MICROSECONDS"))?;
    let rest = &line[space + 1..];
    if rest.first() != Some(&b'[') {
        return Err(bad("no [database client] after the time"));
    }
    let close = memchr::memchr(b']', rest).ok_or_else(|| bad("no ] after the client"))?;
    let client = &rest[1..close];
    req.clear();
    let mut at = close + 1;
    while at < rest.len() {
        if rest[at] == b' ' {
            at += 1;
            continue;
        }
        at = quoted(rest, at, req).map_err(|why| bad(&why))?;
    }
    if req.args.is_empty() {
        return Err(bad("no command"));
    }
    let argc = req.args.len();
    let cmd = req.arg(0);
    let is = |name: &[u8]| cmd.eq_ignore_ascii_case(name);
    // The verb and the arguments it keeps (the command's name and options dropped),
    // or None when kvmark has no verb for it or its arguments do not fit.
    let verb = if (is(b"get") || is(b"exists")) && argc == 2 {
        Some((Verb::Get, 1..2))
    } else if (is(b"set") || is(b"setnx") || is(b"getset")) && argc >= 3 {
        Some((Verb::Put, 1..3))
    } else if (is(b"setex") || is(b"psetex")) && argc == 4 {
        // SETEX key seconds value: the key and the value.
        req.args.swap(2, 3);
        req.ttl = 1;
        Some((Verb::Put, 1..3))
    } else if is(b"append") && argc == 3 {
        Some((Verb::Append, 1..3))
    } else if (is(b"del") || is(b"unlink")) && argc == 2 {
        Some((Verb::Delete, 1..2))
    } else if (is(b"del") || is(b"unlink")) && argc > 2 {
        Some((Verb::MDel, 1..argc))
    } else if is(b"mget") && argc >= 2 {
        Some((Verb::MGet, 1..argc))
    } else if is(b"mset") && argc >= 3 && argc % 2 == 1 {
        Some((Verb::MPut, 1..argc))
    } else if (is(b"incr") || is(b"decr")) && argc == 2 || (is(b"incrby") || is(b"decrby")) && argc == 3 {
        Some((Verb::ReadModifyWrite, 1..2))
    } else {
        None
    };
    let Some((verb, keep)) = verb else {
        // The command's name, from the line itself (the decoded copy is reused).
        let from = close + 1 + rest[close + 1..].iter().position(|&b| b != b' ').unwrap_or(0) + 1;
        let len = rest[from..].iter().position(|&b| b == b'"' || b == b'\\').unwrap_or(0);
        return Ok(Decoded::Unmapped(&rest[from..from + len]));
    };
    req.verb = verb;
    req.keep_args(keep);
    if verb == Verb::ReadModifyWrite {
        // The counter is written back as a number's text.
        req.fill = Some(8);
    }
    req.ts_ns = ts_ns;
    req.client_hash = super::hash(client);
    Ok(Decoded::Request)
}

/// `SECONDS.MICROSECONDS` in nanoseconds.
fn time_ns(text: &[u8]) -> Option<u64> {
    let dot = memchr::memchr(b'.', text)?;
    let (secs, micros) = (&text[..dot], &text[dot + 1..]);
    let digits = |f: &[u8]| !f.is_empty() && f.len() <= 12 && f.iter().all(u8::is_ascii_digit);
    if !digits(secs) || !digits(micros) || micros.len() > 9 {
        return None;
    }
    let whole = secs.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
    let mut frac = micros.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
    for _ in micros.len()..9 {
        frac *= 10;
    }
    whole.checked_mul(1_000_000_000)?.checked_add(frac)
}

/// Reads the quoted argument starting at `rest[at]` into `req`; returns the index
/// after its closing quote.
fn quoted(rest: &[u8], at: usize, req: &mut Request) -> Result<usize, String> {
    if rest[at] != b'"' {
        return Err(format!("argument at byte {} is not quoted", at + 1));
    }
    let start = req.bytes.len();
    let mut i = at + 1;
    loop {
        let Some(&b) = rest.get(i) else {
            return Err("a quoted argument is not closed".to_string());
        };
        match b {
            b'"' => break,
            b'\\' => {
                let esc = *rest.get(i + 1).ok_or("a line ends in an escape")?;
                let byte = match esc {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'x' => {
                        let hex = rest.get(i + 2..i + 4).ok_or("a \\x escape is cut short")?;
                        let text = std::str::from_utf8(hex).map_err(|_| "a \\x escape is not hexadecimal")?;
                        let v = u8::from_str_radix(text, 16).map_err(|_| format!("\\x{text} is not hexadecimal"))?;
                        req.bytes.push(v);
                        i += 4;
                        continue;
                    }
                    other => other,
                };
                req.bytes.push(byte);
                i += 2;
            }
            _ => {
                // Copy the run of plain bytes up to the next quote or escape at once.
                let run = rest[i..]
                    .iter()
                    .position(|&c| c == b'"' || c == b'\\')
                    .unwrap_or(rest.len() - i);
                req.bytes.extend_from_slice(&rest[i..i + run]);
                i += run;
            }
        }
    }
    req.args.push((start, req.bytes.len()));
    Ok(i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Result<(Decoded<'_>, Request), String> {
        super::super::decode_one(super::super::TraceFormat::RedisMonitor, line)
    }

    #[test]
    fn commands_map_onto_the_verbs_with_their_recorded_values() {
        let (d, r) = one(r#"1339518083.107412 [0 127.0.0.1:60866] "SET" "foo" "b\"a\\r\x41\n" "EX" "10""#).unwrap();
        assert_eq!(d, Decoded::Request);
        assert_eq!(
            (r.verb, r.arg(0), r.arg(1)),
            (Verb::Put, &b"foo"[..], &b"b\"a\\rA\n"[..])
        );
        assert_eq!(r.ts_ns, 1_339_518_083_107_412_000);
        let (_, r) = one(r#"1.5 [0 unix:/tmp/r.sock] "setex" "k" "60" "v""#).unwrap();
        assert_eq!(
            (r.verb, r.arg(0), r.arg(1), r.ts_ns),
            (Verb::Put, &b"k"[..], &b"v"[..], 1_500_000_000)
        );
        let (_, r) = one(r#"1.0 [0 lua] "mget" "a" "b" "c""#).unwrap();
        assert_eq!((r.verb, r.args.len()), (Verb::MGet, 3));
        let (_, r) = one(r#"1.0 [0 lua] "mset" "a" "1" "b" "2""#).unwrap();
        assert_eq!((r.verb, r.arg(2), r.arg(3)), (Verb::MPut, &b"b"[..], &b"2"[..]));
        assert_eq!(one(r#"1.0 [0 x] "del" "a""#).unwrap().1.verb, Verb::Delete);
        assert_eq!(one(r#"1.0 [0 x] "del" "a" "b""#).unwrap().1.verb, Verb::MDel);
        assert_eq!(
            one(r#"1.0 [0 x] "incrby" "n" "5""#).unwrap().1.verb,
            Verb::ReadModifyWrite
        );
        assert_eq!(one(r#"1.0 [0 x] "append" "k" "tail""#).unwrap().1.arg(1), b"tail");
        assert_eq!(
            one(r#"1.0 [0 x] "hset" "h" "f" "v""#).unwrap().0,
            Decoded::Unmapped(b"hset")
        );
        assert_eq!(one(r#"1.0 [0 x] "ping""#).unwrap().0, Decoded::Unmapped(b"ping"));
        // A GET with too many arguments is not a GET kvmark can replay.
        assert_eq!(one(r#"1.0 [0 x] "get" "a" "b""#).unwrap().0, Decoded::Unmapped(b"get"));
        assert_eq!(one("OK").unwrap().0, Decoded::Blank);
        // Clients split by their address.
        let c = |l: &str| one(l).unwrap().1.client_hash;
        assert_ne!(c(r#"1.0 [0 a:1] "get" "k""#), c(r#"1.0 [0 a:2] "get" "k""#));
    }

    #[test]
    fn broken_lines_say_what_is_wrong() {
        assert!(one("hello").unwrap_err().contains("no space after the time"));
        assert!(
            one(r#"x.1 [0 a] "get" "k""#)
                .unwrap_err()
                .contains("SECONDS.MICROSECONDS")
        );
        assert!(one(r#"1.1 0 a "get" "k""#).unwrap_err().contains("[database client]"));
        assert!(one(r#"1.1 [0 a] "get" "k"#).unwrap_err().contains("not closed"));
        assert!(one(r#"1.1 [0 a] get"#).unwrap_err().contains("not quoted"));
        assert!(one(r#"1.1 [0 a] "get" "\xZZ""#).unwrap_err().contains("hexadecimal"));
        assert!(one(r#"1.1 [0 a]"#).unwrap_err().contains("no command"));
        // A time past u64 nanoseconds is refused, not wrapped.
        assert!(
            one(r#"999999999999.1 [0 a] "get" "k""#)
                .unwrap_err()
                .contains("SECONDS.MICROSECONDS")
        );
    }
}
