//! kvmark's RESP2 codec (`engine::redis::resp`, the measured Redis path) against the
//! `redis-protocol` crate's, doing one request's protocol work the way the pipe does
//! it: encode the command into the connection's write buffer, then cut the reply off
//! the read buffer and read its value. Requests alternate SET (100-byte value, `+OK`
//! reply) and GET (a 100-byte bulk-string reply), on 16-byte keys.
//!
//! `resp_codec MODE N` does N requests: `own` (kvmark's `resp::array`/`bulk`, then
//! `frame_len` and `item`), `crate` (redis-protocol's `BorrowedFrame` encoded with
//! `encode_borrowed` into the buffer grown to its `encode_len`, then `decode_range`,
//! its allocation-free decoder), or `crate-owned` (the same encoding, then `decode`,
//! which copies each reply into an `OwnedFrame`). bench/resp-instructions.sh runs it
//! under callgrind at two sizes and prints instructions per request.

mod codec_keys;

use std::hint::black_box;

use codec_keys::request_key;

use kvmark::engine::redis::resp::{self, Item};
use redis_protocol::resp2::decode::{decode, decode_range};
use redis_protocol::resp2::encode::encode_borrowed;
use redis_protocol::resp2::types::{BorrowedFrame, OwnedFrame, RangeFrame};

const VALUE: [u8; 100] = [b'x'; 100];

/// The replies a server sends, back to back: `+OK` to a SET, the value to a GET.
fn replies() -> (Vec<u8>, Vec<u8>) {
    let mut get = b"$100\r\n".to_vec();
    get.extend_from_slice(&VALUE);
    get.extend_from_slice(b"\r\n");
    (b"+OK\r\n".to_vec(), get)
}

/// kvmark's path: what `lean.rs` does per request, less the socket.
fn own(n: u64, ok: &[u8], get: &[u8]) -> usize {
    let mut w = Vec::with_capacity(1 << 16);
    let mut k = [0u8; 16];
    let mut seen = 0usize;
    for i in 0..n {
        request_key(i, &mut k);
        let at = w.len();
        let reply = if i % 2 == 0 {
            w.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
            resp::bulk(&mut w, &[&k]);
            resp::bulk(&mut w, &[&VALUE]);
            ok
        } else {
            w.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
            resp::bulk(&mut w, &[&k]);
            get
        };
        seen += w.len() - at;
        let len = resp::frame_len(reply).ok().flatten().expect("a whole reply");
        seen += match resp::item(&reply[..len]) {
            Ok(Some((Item::Simple(s), _))) => s.len(),
            Ok(Some((Item::Bulk(Some(v)), _))) => v.len(),
            _ => panic!("an unexpected reply"),
        };
        if w.len() > 60_000 {
            black_box(&w);
            w.clear();
        }
    }
    seen + w.len()
}

/// The crate's path, with its zero-copy decoder (`owned`: its copying one).
fn krate(n: u64, ok: &[u8], get: &[u8], owned: bool) -> usize {
    let mut w: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut k = [0u8; 16];
    let mut seen = 0usize;
    for i in 0..n {
        request_key(i, &mut k);
        let (frame, reply) = if i % 2 == 0 {
            let args = [
                BorrowedFrame::BulkString(b"SET"),
                BorrowedFrame::BulkString(&k),
                BorrowedFrame::BulkString(&VALUE),
            ];
            (encode_into(&mut w, &BorrowedFrame::Array(&args)), ok)
        } else {
            let args = [BorrowedFrame::BulkString(b"GET"), BorrowedFrame::BulkString(&k)];
            (encode_into(&mut w, &BorrowedFrame::Array(&args)), get)
        };
        seen += frame;
        seen += match owned {
            false => match decode_range(reply) {
                Ok(Some((RangeFrame::SimpleString((a, b)) | RangeFrame::BulkString((a, b)), _))) => reply[a..b].len(),
                _ => panic!("an unexpected reply"),
            },
            true => match decode(reply) {
                Ok(Some((OwnedFrame::SimpleString(v) | OwnedFrame::BulkString(v), _))) => black_box(v).len(),
                _ => panic!("an unexpected reply"),
            },
        };
        if w.len() > 60_000 {
            black_box(&w);
            w.clear();
        }
    }
    seen + w.len()
}

/// Appends `frame` to `w` as the crate's encoder needs: `w` grown by the frame's
/// length first.
fn encode_into(w: &mut Vec<u8>, frame: &BorrowedFrame<'_>) -> usize {
    let at = w.len();
    w.resize(at + frame.encode_len(false), 0);
    encode_borrowed(&mut w[at..], frame, false).expect("the frame fits")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: resp_codec own|crate|crate-owned REQUESTS";
    let (Some(mode), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok())) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let (ok, get) = replies();
    let (ok, get) = (black_box(&ok[..]), black_box(&get[..]));
    let seen = match mode.as_str() {
        "own" => own(n, ok, get),
        "crate" => krate(n, ok, get, false),
        "crate-owned" => krate(n, ok, get, true),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    println!("{mode}: {n} requests ({seen} bytes seen)");
}
