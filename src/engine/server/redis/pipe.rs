//! One connection to a Redis server shared by the sessions of a pipeline group
//! (`--pipeline N`; a session of its own at N = 1): requests are encoded into the
//! connection's write buffer, replies are read into its read buffer and handed to the
//! waiting sessions in the order their requests went out.
//!
//! No task, channel or allocation per request: a session appends its request and
//! waits in [`PipeRef::reply`], whose polls read the socket, cut the replies into
//! frames and mark whose they are. Inside connections (`inflight`) the requests of one
//! turn of the thread are written together when every connection waits
//! ([`inflight::when_idle`]); elsewhere the waiting request writes them itself.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use redis::{Cmd, ConnectionAddr, ConnectionInfo, RedisError, Value};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::{resp, tls};
use crate::engine::inflight::{self, Idle};

/// How much the read buffer grows by, and starts at.
const READ_CHUNK: usize = 16 << 10;

/// The socket: TCP, TCP with TLS or a Unix socket, as the URL says.
enum Stream {
    Tcp(tokio::net::TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>),
    Unix(tokio::net::UnixStream),
}

impl Stream {
    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    /// True when bytes taken by `poll_write` still wait to reach the socket: TLS
    /// records rustls holds because the socket was full.
    fn holds_output(&self) -> bool {
        match self {
            Stream::Tls(s) => s.get_ref().1.wants_write(),
            _ => false,
        }
    }

    /// Writes out what [`Stream::holds_output`]: Ready once the socket took it.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
            _ => Poll::Ready(Ok(())),
        }
    }
}

/// One session's place in the connection: the frames of its reply as they arrive.
#[derive(Default)]
struct Slot {
    used: bool,
    done: bool,
    frames: Vec<u8>,
    waker: Option<Waker>,
}

struct State {
    /// None until connected.
    stream: Option<Stream>,
    /// True once the connection is set up (authenticated, database selected), so the
    /// group's other sessions may send.
    ready: bool,
    /// Sessions waiting for `ready`.
    joining: Vec<Waker>,
    /// Requests not yet written: `wbuf[written..]`.
    wbuf: Vec<u8>,
    written: usize,
    /// Bytes read and not yet cut into frames: `rbuf[rpos..rend]` (`rbuf` is all
    /// initialised, so reads need no unsafe code).
    rbuf: Vec<u8>,
    rpos: usize,
    rend: usize,
    /// Awaited replies in the order the requests went out: the slot and how many
    /// frames it still expects.
    queue: VecDeque<(usize, usize)>,
    slots: Vec<Slot>,
    /// The slot whose waker the socket holds for reading: when it leaves with others
    /// still waiting, the next one is woken to take over.
    reader: Option<usize>,
    /// Why the connection cannot be used any more.
    broken: Option<String>,
    /// True while the connection is on the thread's idle list.
    flagged: bool,
}

impl State {
    /// True while requests wait to reach the socket: not yet written, or held by TLS.
    fn owes_output(&self) -> bool {
        self.written < self.wbuf.len() || self.stream.as_ref().is_some_and(Stream::holds_output)
    }
}

/// One connection, shared by the sessions of a pipeline group.
pub struct Pipe {
    /// The thread that made it: only that thread touches `state`.
    owner: usize,
    state: UnsafeCell<State>,
}

// SAFETY: `state` is only reached through `Pipe::state`, which refuses every thread
// but the owner, and no reference it returns is kept across a call that could reach
// it again. The reference count is the `Arc`'s own (atomic), so the last owner,
// whichever thread it is on, has the state to itself when it drops it.
unsafe impl Send for Pipe {}
// SAFETY: as above.
unsafe impl Sync for Pipe {}

thread_local! {
    static MARK: u8 = const { 0 };
}

/// A number unique to the calling thread while it lives.
fn this_thread() -> usize {
    MARK.with(ptr_addr)
}

fn ptr_addr(m: &u8) -> usize {
    std::ptr::from_ref(m) as usize
}

/// An I/O error for a connection that can no longer carry requests, so the session's
/// link sees a broken connection.
fn lost(why: &str) -> RedisError {
    RedisError::from(io::Error::new(io::ErrorKind::ConnectionAborted, why.to_string()))
}

impl Pipe {
    fn new() -> Arc<Pipe> {
        Arc::new(Pipe {
            owner: this_thread(),
            state: UnsafeCell::new(State {
                stream: None,
                ready: false,
                joining: Vec::new(),
                wbuf: Vec::with_capacity(READ_CHUNK),
                written: 0,
                rbuf: vec![0; READ_CHUNK],
                rpos: 0,
                rend: 0,
                queue: VecDeque::new(),
                slots: Vec::new(),
                reader: None,
                broken: None,
                flagged: false,
            }),
        })
    }

    /// The state, on the owner's thread only.
    #[allow(clippy::mut_from_ref)]
    fn state(&self) -> Result<&mut State, RedisError> {
        if self.owner != this_thread() {
            return Err(lost("the connection belongs to another thread"));
        }
        // SAFETY: see `unsafe impl Send for Pipe`.
        Ok(unsafe { &mut *self.state.get() })
    }

    /// True when a session of this thread can still send on it.
    fn usable(&self) -> bool {
        self.state().is_ok_and(|s| s.broken.is_none())
    }

    /// Ends the connection: every waiting session is woken to fail.
    fn fail(state: &mut State, why: String) {
        if state.broken.is_none() {
            state.broken = Some(why);
        }
        state.stream = None;
        for w in state.joining.drain(..) {
            w.wake();
        }
        for &(slot, _) in &state.queue {
            if let Some(w) = &state.slots[slot].waker {
                w.wake_by_ref();
            }
        }
        state.queue.clear();
    }

    /// Writes what is buffered; Ready once all of it is written.
    fn poll_flush(state: &mut State, cx: &mut Context<'_>) -> Poll<Result<(), ()>> {
        while state.written < state.wbuf.len() {
            let Some(stream) = state.stream.as_mut() else {
                return Poll::Ready(Err(()));
            };
            match stream.poll_write(cx, &state.wbuf[state.written..]) {
                Poll::Ready(Ok(0)) => {
                    Self::fail(state, "the server closed the connection".into());
                    return Poll::Ready(Err(()));
                }
                Poll::Ready(Ok(n)) => state.written += n,
                Poll::Ready(Err(e)) => {
                    Self::fail(state, format!("writing to the server: {e}"));
                    return Poll::Ready(Err(()));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        state.wbuf.clear();
        state.written = 0;
        if let Some(stream) = state.stream.as_mut().filter(|s| s.holds_output()) {
            match stream.poll_drain(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => {
                    Self::fail(state, format!("writing to the server: {e}"));
                    return Poll::Ready(Err(()));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Cuts whole frames off the read buffer and gives them to the waiting slots in
    /// order, waking each finished one but `me`.
    fn dispatch(state: &mut State, me: usize) {
        while let Some(&(slot, left)) = state.queue.front() {
            let len = match resp::frame_len(&state.rbuf[state.rpos..state.rend]) {
                Ok(Some(len)) => len,
                Ok(None) => break,
                Err(resp::Malformed(why)) => return Self::fail(state, format!("a reply that is not RESP2: {why}")),
            };
            let s = &mut state.slots[slot];
            s.frames.extend_from_slice(&state.rbuf[state.rpos..state.rpos + len]);
            state.rpos += len;
            if left > 1 {
                state.queue[0].1 = left - 1;
                continue;
            }
            s.done = true;
            state.queue.pop_front();
            if slot != me
                && let Some(w) = &s.waker
            {
                w.wake_by_ref();
            }
        }
        if state.rpos == state.rend {
            state.rpos = 0;
            state.rend = 0;
        } else if state.queue.is_empty() {
            Self::fail(state, "the server sent a reply nobody asked for".into());
        }
    }

    /// Reads more of the socket into the read buffer: Ready(true) when bytes came.
    fn poll_fill(state: &mut State, cx: &mut Context<'_>) -> Poll<bool> {
        if state.rpos > 0 {
            // Keep the unread tail at the front, so the buffer only grows for a frame
            // larger than it.
            state.rbuf.copy_within(state.rpos..state.rend, 0);
            state.rend -= state.rpos;
            state.rpos = 0;
        }
        if state.rbuf.len() - state.rend < READ_CHUNK / 4 {
            let grown = state.rbuf.len() + READ_CHUNK.max(state.rbuf.len() / 2);
            state.rbuf.resize(grown, 0);
        }
        let Some(stream) = state.stream.as_mut() else {
            return Poll::Ready(false);
        };
        let mut buf = ReadBuf::new(&mut state.rbuf[state.rend..]);
        match stream.poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) if buf.filled().is_empty() => {
                Self::fail(state, "the server closed the connection".into());
                Poll::Ready(false)
            }
            Poll::Ready(Ok(())) => {
                state.rend += buf.filled().len();
                Poll::Ready(true)
            }
            Poll::Ready(Err(e)) => {
                Self::fail(state, format!("reading from the server: {e}"));
                Poll::Ready(false)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Idle for Pipe {
    fn idle(&self, cx: &mut Context<'_>) -> bool {
        let Ok(state) = self.state() else { return true };
        match Self::poll_flush(state, cx) {
            Poll::Pending => false,
            Poll::Ready(_) => {
                state.flagged = false;
                true
            }
        }
    }
}

/// The pipe a group's sessions share (kept in the group's [`crate::engine::Pipeline`]).
#[derive(Default)]
pub struct Group {
    pipe: Mutex<Option<Arc<Pipe>>>,
}

/// A session's hold on a pipe: its slot in it.
pub struct PipeRef {
    pipe: Arc<Pipe>,
    slot: usize,
}

impl PipeRef {
    /// Joins the group's connection, or opens one (for `group` None, one of its own)
    /// to the server of `info`.
    /// `tls` is the handshake's configuration, for a `rediss://` address.
    pub async fn connect(
        group: Option<&Group>,
        info: &ConnectionInfo,
        tls: Option<&tokio_rustls::TlsConnector>,
    ) -> Result<PipeRef, RedisError> {
        let (pipe, make) = match group {
            None => (Pipe::new(), true),
            Some(g) => {
                let mut current = g.pipe.lock().unwrap_or_else(|e| e.into_inner());
                match current.as_ref().filter(|p| p.usable()) {
                    Some(p) => (p.clone(), false),
                    None => {
                        let p = Pipe::new();
                        *current = Some(p.clone());
                        (p, true)
                    }
                }
            }
        };
        let me = PipeRef::join(pipe)?;
        if make {
            // Dropped before the set-up ends (a timeout): the sessions waiting to join
            // must not wait for it.
            let mut guard = SetUp(Some(&me.pipe));
            me.open(info, tls).await?;
            guard.0 = None;
        } else {
            me.joined().await?;
        }
        Ok(me)
    }

    fn join(pipe: Arc<Pipe>) -> Result<PipeRef, RedisError> {
        let state = pipe.state()?;
        let slot = match state.slots.iter().position(|s| !s.used) {
            Some(free) => free,
            None => {
                state.slots.push(Slot::default());
                state.slots.len() - 1
            }
        };
        state.slots[slot].used = true;
        Ok(PipeRef { pipe, slot })
    }

    /// Connects the socket (with the TLS handshake for `rediss://`) and sets the
    /// connection up as the URL asks (AUTH, SELECT).
    async fn open(&self, info: &ConnectionInfo, tls: Option<&tokio_rustls::TlsConnector>) -> Result<(), RedisError> {
        if info.redis_settings().protocol() != redis::ProtocolVersion::RESP2 {
            return Err(RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "kvmark speaks RESP2 to Redis; drop protocol=resp3 from the URL",
            )));
        }
        let stream = match info.addr() {
            ConnectionAddr::Tcp(host, port) => {
                let socket = tokio::net::TcpStream::connect((host.as_str(), *port)).await?;
                socket.set_nodelay(info.tcp_settings().nodelay())?;
                Stream::Tcp(socket)
            }
            ConnectionAddr::TcpTls { host, port, .. } => {
                let Some(tls) = tls else {
                    return Err(RedisError::from((
                        redis::ErrorKind::InvalidClientConfig,
                        "a rediss:// address without a TLS configuration",
                        info.addr().to_string(),
                    )));
                };
                let name = tls::server_name(host)
                    .map_err(|why| RedisError::from((redis::ErrorKind::InvalidClientConfig, "TLS", why)))?;
                let socket = tokio::net::TcpStream::connect((host.as_str(), *port)).await?;
                socket.set_nodelay(info.tcp_settings().nodelay())?;
                // A certificate that does not verify fails here, with rustls's reason.
                // Boxed: the handshake's state is large, and this future is part of
                // every request's where a request may connect (a cluster's node), which
                // `block_on` moves whole on each operation.
                Stream::Tls(Box::new(Box::pin(tls.connect(name, socket)).await?))
            }
            ConnectionAddr::Unix(path) => Stream::Unix(tokio::net::UnixStream::connect(path).await?),
            other => {
                return Err(RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "an address kvmark cannot reach",
                    other.to_string(),
                )));
            }
        };
        self.pipe.state()?.stream = Some(stream);
        let settings = info.redis_settings();
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            auth.arg(password);
            self.command(false, &auth).await?;
        }
        if settings.db() != 0 {
            self.command(false, redis::cmd("SELECT").arg(settings.db())).await?;
        }
        let state = self.pipe.state()?;
        state.ready = true;
        for w in state.joining.drain(..) {
            w.wake();
        }
        Ok(())
    }

    /// Waits until the session that opens the connection has set it up.
    async fn joined(&self) -> Result<(), RedisError> {
        poll_fn(|cx| {
            let state = self.pipe.state()?;
            if let Some(why) = &state.broken {
                return Poll::Ready(Err(lost(why)));
            }
            if state.ready {
                return Poll::Ready(Ok(()));
            }
            state.joining.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Appends one request, written with `encode`, that `frames` replies answer.
    pub fn send(&self, frames: usize, encode: impl FnOnce(&mut Vec<u8>)) -> Result<(), RedisError> {
        let state = self.pipe.state()?;
        if let Some(why) = &state.broken {
            return Err(lost(why));
        }
        let slot = &mut state.slots[self.slot];
        slot.done = false;
        slot.frames.clear();
        encode(&mut state.wbuf);
        state.queue.push_back((self.slot, frames));
        if !state.flagged && inflight::in_connection() {
            state.flagged = true;
            inflight::when_idle(self.pipe.clone());
        }
        Ok(())
    }

    /// Waits for the reply to this session's request; then its frames are in
    /// [`PipeRef::frames`]. Dropped before the reply came (a timeout), it ends the
    /// connection: the replies after it could no longer be matched.
    pub async fn reply(&self) -> Result<(), RedisError> {
        let mut wait = Wait {
            at: self,
            finished: false,
        };
        poll_fn(|cx| wait.poll(cx)).await
    }

    /// The frames of the last reply, back to back.
    pub fn frames(&self) -> Result<&[u8], RedisError> {
        Ok(&self.pipe.state()?.slots[self.slot].frames)
    }

    /// Starts writing what is buffered without waiting for it, so requests to several
    /// connections go out together before the first reply is awaited. What the socket
    /// does not take now is written by the wait for the reply (or, inside
    /// connections, when the thread idles).
    pub fn flush_now(&self) {
        if let Ok(state) = self.pipe.state()
            && !state.flagged
            && state.owes_output()
        {
            let mut cx = Context::from_waker(Waker::noop());
            let _ = Pipe::poll_flush(state, &mut cx);
        }
    }

    /// Sends `cmd` and returns its reply as the crate's value (the rarer verbs).
    /// `asking`: preceded by ASKING in the same write (a cluster's ASK redirection), so
    /// no other session's request comes between them.
    pub async fn command(&self, asking: bool, cmd: &Cmd) -> Result<Value, RedisError> {
        self.send(1 + usize::from(asking), |w| {
            if asking {
                w.extend_from_slice(ASKING);
            }
            cmd.write_packed_command(w)
        })?;
        self.reply().await?;
        let v = redis::parse_redis_value(skip_asked(self.frames()?, asking)?)?;
        v.extract_error()
    }

    /// Sends the commands of `pipeline` and returns the `count` replies after the
    /// first `offset` (what the crate's `Pipeline::query_async` asks for); `asking` as
    /// for [`PipeRef::command`] (inside MULTI the flag holds until EXEC).
    pub async fn commands(
        &self,
        asking: bool,
        pipeline: &redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> Result<Vec<Value>, RedisError> {
        let packed = pipeline.get_packed_pipeline();
        self.send(offset + count + usize::from(asking), |w| {
            if asking {
                w.extend_from_slice(ASKING);
            }
            w.extend_from_slice(&packed)
        })?;
        self.reply().await?;
        let mut frames = skip_asked(self.frames()?, asking)?;
        let mut values = Vec::with_capacity(count);
        let mut i = 0;
        while !frames.is_empty() {
            let len = match resp::frame_len(frames) {
                Ok(Some(len)) => len,
                _ => return Err(lost("a reply cut short")),
            };
            let v = redis::parse_redis_value(&frames[..len])?;
            frames = &frames[len..];
            // A refused command inside MULTI shows in its QUEUED place.
            let v = v.extract_error()?;
            if i >= offset {
                values.push(v);
            }
            i += 1;
        }
        Ok(values)
    }
}

/// The ASKING command, as RESP.
pub const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";

/// `frames` without the reply to a leading ASKING (`asking`), which must be `+OK`.
pub fn skip_asked(frames: &[u8], asking: bool) -> Result<&[u8], RedisError> {
    if !asking {
        return Ok(frames);
    }
    match frames.strip_prefix(b"+OK\r\n") {
        Some(rest) => Ok(rest),
        None => {
            let shown = &frames[..frames.len().min(64)];
            Err(RedisError::from((
                redis::ErrorKind::UnexpectedReturnType,
                "ASKING was refused",
                String::from_utf8_lossy(shown).into_owned(),
            )))
        }
    }
}

impl Drop for PipeRef {
    fn drop(&mut self) {
        if let Ok(state) = self.pipe.state()
            && let Some(slot) = state.slots.get_mut(self.slot)
        {
            *slot = Slot::default();
        }
    }
}

/// Ends a connection whose set-up did not finish.
struct SetUp<'a>(Option<&'a Arc<Pipe>>);

impl Drop for SetUp<'_> {
    fn drop(&mut self) {
        if let Some(pipe) = self.0
            && let Ok(state) = pipe.state()
        {
            Pipe::fail(state, "the connection's set-up did not finish".into());
        }
    }
}

/// One wait for a reply.
struct Wait<'a> {
    at: &'a PipeRef,
    finished: bool,
}

impl Wait<'_> {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), RedisError>> {
        let me = self.at.slot;
        let state = match self.at.pipe.state() {
            Ok(s) => s,
            Err(e) => {
                self.finished = true;
                return Poll::Ready(Err(e));
            }
        };
        // Outside connections nobody writes for this session: it does. A failed write
        // leaves `broken` set, which the loop below reports; Pending means the socket
        // holds this waker for writing.
        if !state.flagged && state.owes_output() {
            let _ = Pipe::poll_flush(state, cx);
        }
        loop {
            if let Some(why) = &state.broken {
                self.finished = true;
                return Poll::Ready(Err(lost(why)));
            }
            if state.slots[me].done {
                self.finished = true;
                if state.reader == Some(me) {
                    state.reader = None;
                    // The socket holds this session's waker: the next waiting one
                    // takes over reading.
                    if let Some(&(next, _)) = state.queue.front()
                        && let Some(w) = &state.slots[next].waker
                    {
                        w.wake_by_ref();
                    }
                }
                return Poll::Ready(Ok(()));
            }
            if state.reader.is_some_and(|r| r != me) {
                // Another waiting session holds the socket's waker and hands this one
                // its reply: no need to look at the socket.
                break;
            }
            match Pipe::poll_fill(state, cx) {
                Poll::Ready(true) => Pipe::dispatch(state, me),
                Poll::Ready(false) => {}
                Poll::Pending => break,
            }
        }
        if state.reader.is_none() {
            state.reader = Some(me);
        }
        let slot = &mut state.slots[me];
        match &slot.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => slot.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if !self.finished
            && let Ok(state) = self.at.pipe.state()
        {
            Pipe::fail(state, "a request got no reply in time".into());
        }
    }
}
