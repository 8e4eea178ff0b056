//! kvmark's memcached meta-protocol client code (`engine::memcached::meta`, the
//! measured memcached path) against the `memcache-async` crate's ASCII client, doing
//! one request's protocol work: encode it, then read its reply. Requests alternate
//! SET (100-byte value) and GET (a 100-byte hit), on 16-byte keys in a store's `t1:`
//! prefix.
//!
//! `memcached_codec MODE N` does N requests:
//! - `own`: what the engine does per request, less the socket: `meta::ms` or
//!   `meta::mg` into the connection's write buffer, then `frame_len` and `reply` on
//!   the read buffer (`HD`, or `VA 100` and the value).
//! - `crate`: memcache-async's `add` (the crate's store that reads its reply, `STORED`)
//!   and `get` (`VALUE ... END`), on an in-memory stream that serves each command's
//!   reply. The crate's writes go to that stream without a copy, so it is charged less
//!   than on a socket, where each of its `write_all` calls is a send.
//! - `crate-noreply`: the crate's `set`, which sends `noreply` and reads nothing, so a
//!   failed store is never seen; shown for its encoding cost alone.
//!
//! Each future is polled once with a no-op waker: the stream is always ready, so the
//! crate's request completes in one poll and no executor is measured.
//! bench/memcached-codec-instructions.sh runs it under callgrind at two sizes and prints
//! instructions per request, and the stream's writes per request (sends on a socket).

mod codec_keys;

use std::cell::Cell;
use std::hint::black_box;

use codec_keys::request_key;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use futures_io::{AsyncRead, AsyncWrite};
use kvmark::engine::memcached::meta::{self, Condition, Reply};
use memcache_async::ascii::Protocol;

const VALUE: [u8; 100] = [b'x'; 100];
const PREFIX: &[u8] = b"t1:";

/// The meta replies a server sends: `HD` to a set, the value to a get.
fn meta_replies() -> (Vec<u8>, Vec<u8>) {
    let mut get = b"VA 100\r\n".to_vec();
    get.extend_from_slice(&VALUE);
    get.extend_from_slice(b"\r\n");
    (b"HD\r\n".to_vec(), get)
}

/// kvmark's path: what the memcached engine does per request, less the socket.
fn own(n: u64) -> usize {
    let (hd, va) = meta_replies();
    let (hd, va) = (black_box(&hd[..]), black_box(&va[..]));
    let mut w = Vec::with_capacity(1 << 16);
    let mut scratch = Vec::new();
    let mut k = [0u8; 16];
    let mut seen = 0usize;
    for i in 0..n {
        request_key(i, &mut k);
        let at = w.len();
        let reply = if i % 2 == 0 {
            meta::ms(&mut w, PREFIX, &k, &VALUE, Condition::Always, &mut scratch);
            hd
        } else {
            meta::mg(&mut w, PREFIX, &k, false, &mut scratch);
            va
        };
        seen += w.len() - at;
        let len = meta::frame_len(reply).ok().flatten().expect("a whole reply");
        seen += match meta::reply(&reply[..len]) {
            Reply::Done => 1,
            Reply::Value(v, _) => v.len(),
            other => panic!("an unexpected reply: {other:?}"),
        };
        if w.len() > 60_000 {
            black_box(&w);
            w.clear();
        }
    }
    seen + w.len()
}

/// An in-memory connection: takes every write, and after a command line serves that
/// command's reply once.
struct Canned {
    stored: &'static [u8],
    value: Vec<u8>,
    pending: Option<bool>,
    at: usize,
    /// The writes the crate made (each a send on a socket), shared with the caller
    /// because the stream lives inside the client.
    writes: Rc<Cell<u64>>,
}

impl AsyncWrite for Canned {
    fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if buf.starts_with(b"get ") {
            self.pending = Some(true);
        } else if buf.starts_with(b"add ") {
            self.pending = Some(false);
        }
        self.at = 0;
        self.writes.set(self.writes.get() + 1);
        Poll::Ready(Ok(black_box(buf).len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for Canned {
    fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, out: &mut [u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let reply: &[u8] = match this.pending {
            Some(true) => &this.value,
            Some(false) => this.stored,
            // The crate asked for more than its command's reply: a mistake of this bench.
            None => panic!("a read with no reply pending"),
        };
        let n = (reply.len() - this.at).min(out.len());
        out[..n].copy_from_slice(&reply[this.at..this.at + n]);
        this.at += n;
        if this.at == reply.len() {
            this.pending = None;
        }
        Poll::Ready(Ok(n))
    }
}

/// Polls `f` once: the in-memory stream never blocks, so it must be done.
fn once<T>(f: impl std::future::Future<Output = T>, cx: &mut Context<'_>) -> T {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the crate's request waited on an always-ready stream"),
    }
}

/// The crate's path: `add` (reads `STORED`) or, with `noreply`, `set`; and `get`.
fn krate(n: u64, noreply: bool) -> (usize, u64) {
    let mut value = b"VALUE t1:key:000000000000 0 100\r\n".to_vec();
    value.extend_from_slice(&VALUE);
    value.extend_from_slice(b"\r\nEND\r\n");
    let writes = Rc::new(Cell::new(0));
    let stream = Canned {
        stored: b"STORED\r\n",
        value,
        pending: None,
        at: 0,
        writes: Rc::clone(&writes),
    };
    let mut client = Protocol::new(stream);
    let mut cx = Context::from_waker(Waker::noop());
    let mut full = *b"t1:key:000000000000";
    let mut seen = 0usize;
    for i in 0..n {
        let mut k = [0u8; 16];
        request_key(i, &mut k);
        full[PREFIX.len()..].copy_from_slice(&k);
        // The key is ASCII digits and letters, as the crate's `Display` keys need.
        let full_key = std::str::from_utf8(&full).expect("an ASCII key");
        if i % 2 == 0 {
            let stored = if noreply {
                once(client.set(full_key, &VALUE, 0), &mut cx)
            } else {
                once(client.add(full_key, &VALUE, 0), &mut cx)
            };
            stored.expect("the store");
            seen += 1;
        } else {
            let v = once(client.get(full_key), &mut cx).expect("a hit");
            seen += black_box(v).len();
        }
    }
    (seen, writes.get())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: memcached_codec own|crate|crate-noreply REQUESTS";
    let (Some(mode), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok())) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    // kvmark's path encodes into a buffer the pipe sends whole: no writes here.
    let (seen, writes) = match mode.as_str() {
        "own" => (own(n), 0),
        "crate" => krate(n, false),
        "crate-noreply" => krate(n, true),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    println!("{mode}: {n} requests ({seen} bytes seen, {writes} writes)");
}
