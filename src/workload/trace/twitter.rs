//! Twitter's open cache traces (twitter/cache-trace): one request per CSV line,
//!
//! ```text
//! timestamp,anonymized key,key size,value size,client id,operation,TTL
//! ```
//!
//! with the timestamp in whole seconds from the trace's start. The anonymized key is
//! replayed as it is written. The key is the only field that may hold a comma, so
//! the line is split at its first comma and its last five.

use super::{Decoded, Request, Verb};

/// The largest value size a line may give: far past memcached's 1 MB item limit that
/// the traces come from, so a larger one is a broken line, not a value.
const MAX_VALUE: u64 = 64 << 20;

/// Reads one line into `req`.
pub fn decode<'a>(line: &'a [u8], req: &mut Request) -> Result<Decoded<'a>, String> {
    if line.is_empty() {
        return Ok(Decoded::Blank);
    }
    let Some(first) = memchr::memchr(b',', line) else {
        return Err(format!(
            "not a cache-trace line (expected 7 comma-separated fields: timestamp,key,key size,value size,client id,operation,TTL): '{}'",
            String::from_utf8_lossy(&line[..line.len().min(80)])
        ));
    };
    let mut tail = [&b""[..]; 5];
    let mut end = line.len();
    for slot in tail.iter_mut().rev() {
        let Some(comma) = memchr::memrchr(b',', &line[first + 1..end]) else {
            return Err(format!(
                "not a cache-trace line: it has fewer than 7 comma-separated fields (timestamp,key,key size,value size,client id,operation,TTL): '{}'",
                String::from_utf8_lossy(&line[..line.len().min(80)])
            ));
        };
        let comma = first + 1 + comma;
        *slot = &line[comma + 1..end];
        end = comma;
    }
    let [_key_size, value_size, client, op, ttl] = tail;
    let key = &line[first + 1..end];
    let ts = number(&line[..first], "timestamp")?;
    let value_size = number(value_size, "value size")?;
    if value_size > MAX_VALUE {
        return Err(format!("value size {value_size} is larger than {MAX_VALUE} bytes"));
    }
    if key.is_empty() {
        return Err("the key is empty".to_string());
    }
    let verb = match op {
        b"get" | b"gets" => Verb::Get,
        b"set" | b"add" | b"replace" | b"cas" => Verb::Put,
        // kvmark's stores append only; a prepend is timed as the append of its bytes.
        b"append" | b"prepend" => Verb::Append,
        b"delete" => Verb::Delete,
        b"incr" | b"decr" => Verb::ReadModifyWrite,
        other => return Ok(Decoded::Unmapped(other)),
    };
    req.clear();
    req.verb = verb;
    req.ts_ns = ts.saturating_mul(1_000_000_000);
    req.push_arg(key);
    req.fill = match verb {
        // A counter is read and written back at its recorded size (at least a digit).
        Verb::ReadModifyWrite => Some(value_size.max(1) as usize),
        Verb::Put | Verb::Append => Some(value_size as usize),
        _ => None,
    };
    req.client_hash = super::hash(client);
    req.ttl = number(ttl, "TTL")?;
    Ok(Decoded::Request)
}

/// A field that must be a whole number.
fn number(field: &[u8], what: &str) -> Result<u64, String> {
    if field.is_empty() || field.len() > 19 || !field.iter().all(u8::is_ascii_digit) {
        return Err(format!(
            "the {what} '{}' is not a whole number",
            String::from_utf8_lossy(&field[..field.len().min(40)])
        ));
    }
    Ok(field.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Result<(Decoded<'_>, Request), String> {
        super::super::decode_one(super::super::TraceFormat::Twitter, line)
    }

    #[test]
    fn lines_map_onto_the_verbs_with_their_recorded_sizes() {
        let (d, r) = one("12,q:q:1:8WTfjZU,19,230,7,set,3600").unwrap();
        assert_eq!(d, Decoded::Request);
        assert_eq!(
            (r.verb, r.arg(0), r.fill, r.ts_ns),
            (Verb::Put, &b"q:q:1:8WTfjZU"[..], Some(230), 12_000_000_000)
        );
        let (_, r) = one("0,k,1,0,1,gets,0").unwrap();
        assert_eq!((r.verb, r.fill), (Verb::Get, None));
        assert_eq!(one("0,k,1,0,1,delete,0").unwrap().1.verb, Verb::Delete);
        assert_eq!(one("0,k,1,5,1,prepend,0").unwrap().1.verb, Verb::Append);
        assert_eq!(one("0,k,1,0,1,incr,0").unwrap().1.fill, Some(1));
        // A comma inside the key stays in the key.
        assert_eq!(one("3,a,b,c,5,10,9,add,0").unwrap().1.arg(0), b"a,b,c");
        // Clients split by their id.
        assert_ne!(
            one("0,k,1,0,1,get,0").unwrap().1.client_hash,
            one("0,k,1,0,2,get,0").unwrap().1.client_hash
        );
        assert_eq!(one("").unwrap().0, Decoded::Blank);
        assert_eq!(one("0,k,1,0,1,touch,0").unwrap().0, Decoded::Unmapped(b"touch"));
    }

    #[test]
    fn broken_lines_say_what_is_wrong() {
        assert!(one("garbage").unwrap_err().contains("7 comma-separated fields"));
        assert!(one("1,k,1,0,get,0").unwrap_err().contains("fewer than 7"));
        assert!(one("x,k,1,0,1,get,0").unwrap_err().contains("timestamp 'x'"));
        assert!(one("1,k,1,-4,1,get,0").unwrap_err().contains("value size '-4'"));
        assert!(one("1,k,1,99999999999,1,set,0").unwrap_err().contains("larger than"));
        assert!(one("1,,1,2,1,set,0").unwrap_err().contains("key is empty"));
    }
}
