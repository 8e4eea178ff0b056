//! One connection shared by the sessions of a pipeline group (`--pipeline N`; a
//! session of its own at N = 1), for the engines whose protocol kvmark speaks itself
//! (Redis's RESP, memcached's meta commands): requests are encoded into the
//! connection's write buffer, replies are read into its read buffer, cut into frames by
//! the protocol's [`Framing`], and handed to the waiting sessions in the order their
//! requests went out.
//!
//! No task, channel or allocation per request: a session appends its request and
//! waits in [`PipeRef::reply`], whose polls read the socket, cut the replies into
//! frames and mark whose they are. Inside connections (`inflight`) the requests of one
//! turn of the thread are written together when every connection waits
//! ([`inflight::when_idle`]); elsewhere the waiting request writes them itself.
//!
//! The engine opens the socket ([`Stream`]) and sets the connection up in its own
//! protocol (authentication, a database); the pipe's errors are I/O errors, which
//! every engine counts as a lost connection.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::engine::inflight::{self, Idle};

/// How much the read buffer grows by, and starts at.
const READ_CHUNK: usize = 16 << 10;

/// How a protocol's replies are cut into frames: one frame per reply the pipe waits for.
pub trait Framing: 'static {
    /// The protocol's name, for a reply that is not one of its frames.
    const PROTOCOL: &'static str;

    /// The length of the whole frame at the start of `buf`: None while it is not all
    /// there yet; Err(why) when the bytes are not a frame of the protocol.
    fn frame_len(buf: &[u8]) -> Result<Option<usize>, String>;
}

/// The socket: TCP, TCP with TLS or a Unix socket.
pub enum Stream {
    /// Plain TCP.
    Tcp(tokio::net::TcpStream),
    /// TCP with TLS (rustls).
    Tls(Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>),
    /// A Unix socket.
    Unix(tokio::net::UnixStream),
}

impl Stream {
    /// A TCP connection to `host:port`, with Nagle's delay off when `nodelay`.
    pub async fn tcp(host: &str, port: u16, nodelay: bool) -> io::Result<Stream> {
        let socket = tokio::net::TcpStream::connect((host, port)).await?;
        socket.set_nodelay(nodelay)?;
        Ok(Stream::Tcp(socket))
    }

    /// A TCP connection to `host:port` with the TLS handshake done, the server's
    /// certificate checked for `name`; a certificate that does not verify fails here,
    /// with rustls's reason.
    pub async fn tls(
        connector: &tokio_rustls::TlsConnector,
        name: ServerName<'static>,
        host: &str,
        port: u16,
        nodelay: bool,
    ) -> io::Result<Stream> {
        let socket = tokio::net::TcpStream::connect((host, port)).await?;
        socket.set_nodelay(nodelay)?;
        // Boxed: the handshake's state is large, and this future is part of every
        // request's where a request may connect (a cluster's node), which `block_on`
        // moves whole on each operation.
        Ok(Stream::Tls(Box::new(Box::pin(connector.connect(name, socket)).await?)))
    }

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
    /// Offsets in `wbuf` where a write ends, so a TLS record ends there too
    /// ([`PipeRef::send_sealed`]); ascending.
    seals: VecDeque<usize>,
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

/// One connection, shared by the sessions of a pipeline group, its replies cut into
/// frames by `F`.
pub struct Pipe<F> {
    /// The thread that made it: only that thread touches `state`.
    owner: usize,
    state: UnsafeCell<State>,
    framing: PhantomData<fn() -> F>,
}

// SAFETY: `state` is only reached through `Pipe::state`, which refuses every thread
// but the owner, and no reference it returns is kept across a call that could reach
// it again. The reference count is the `Arc`'s own (atomic), so the last owner,
// whichever thread it is on, has the state to itself when it drops it.
unsafe impl<F> Send for Pipe<F> {}
// SAFETY: as above.
unsafe impl<F> Sync for Pipe<F> {}

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
pub fn lost(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, why.to_string())
}

impl<F: Framing> Pipe<F> {
    fn new() -> Arc<Pipe<F>> {
        Arc::new(Pipe {
            owner: this_thread(),
            state: UnsafeCell::new(State {
                stream: None,
                ready: false,
                joining: Vec::new(),
                wbuf: Vec::with_capacity(READ_CHUNK),
                written: 0,
                seals: VecDeque::new(),
                rbuf: vec![0; READ_CHUNK],
                rpos: 0,
                rend: 0,
                queue: VecDeque::new(),
                slots: Vec::new(),
                reader: None,
                broken: None,
                flagged: false,
            }),
            framing: PhantomData,
        })
    }

    /// The state, on the owner's thread only.
    #[allow(clippy::mut_from_ref)]
    fn state(&self) -> io::Result<&mut State> {
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
            while state.seals.front().is_some_and(|&at| at <= state.written) {
                state.seals.pop_front();
            }
            let end = state.seals.front().copied().unwrap_or(state.wbuf.len());
            match stream.poll_write(cx, &state.wbuf[state.written..end]) {
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
        state.seals.clear();
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
            let len = match F::frame_len(&state.rbuf[state.rpos..state.rend]) {
                Ok(Some(len)) => len,
                Ok(None) => break,
                Err(why) => return Self::fail(state, format!("a reply that is not {}: {why}", F::PROTOCOL)),
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

impl<F: Framing> Idle for Pipe<F> {
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
pub struct Group<F> {
    pipe: Mutex<Option<Arc<Pipe<F>>>>,
}

impl<F> Default for Group<F> {
    fn default() -> Self {
        Group { pipe: Mutex::new(None) }
    }
}

/// A session's hold on a pipe: its slot in it.
pub struct PipeRef<F: Framing> {
    pipe: Arc<Pipe<F>>,
    slot: usize,
}

impl<F: Framing> PipeRef<F> {
    /// Joins the group's connection, or makes a new one (for `group` None, one of its
    /// own). True when it is new: the caller then opens it ([`PipeRef::setting_up`],
    /// [`PipeRef::attach`], its protocol's set-up, [`SetUp::finish`]); otherwise it
    /// waits for the group's opener with [`PipeRef::joined`].
    pub fn claim(group: Option<&Group<F>>) -> io::Result<(PipeRef<F>, bool)> {
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
        Ok((PipeRef::join(pipe)?, make))
    }

    fn join(pipe: Arc<Pipe<F>>) -> io::Result<PipeRef<F>> {
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

    /// The guard of a new connection's set-up: dropped before [`SetUp::finish`] (an
    /// error, a timeout), it ends the connection, so the sessions waiting to join do
    /// not wait for it.
    pub fn setting_up(&self) -> SetUp<'_, F> {
        SetUp(Some(&self.pipe))
    }

    /// Gives a new connection its socket; requests sent from now on go out on it.
    pub fn attach(&self, stream: Stream) -> io::Result<()> {
        self.pipe.state()?.stream = Some(stream);
        Ok(())
    }

    /// Waits until the session that opens the connection has set it up.
    pub async fn joined(&self) -> io::Result<()> {
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
    #[inline]
    pub fn send(&self, frames: usize, encode: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        self.enqueue(frames, |state| encode(&mut state.wbuf))
    }

    /// Like [`PipeRef::send`] for a request of `parts` parts, written by `encode(w, i)`,
    /// each ending a write of its own (over TLS, a record): the next part, or the next
    /// request, starts a record. memcached 1.6.18 over TLS leaves the rest of a record
    /// unread after the end of a value it reads straight into its item, until more bytes
    /// come, so a request sharing that record would wait for its reply forever.
    pub fn send_sealed(
        &self,
        frames: usize,
        parts: usize,
        mut encode: impl FnMut(&mut Vec<u8>, usize),
    ) -> io::Result<()> {
        self.enqueue(frames, |state| {
            for i in 0..parts {
                encode(&mut state.wbuf, i);
                let at = state.wbuf.len();
                state.seals.push_back(at);
            }
        })
    }

    /// Queues a request that `frames` replies answer, written into the state by `write`.
    #[inline]
    fn enqueue(&self, frames: usize, write: impl FnOnce(&mut State)) -> io::Result<()> {
        let state = self.pipe.state()?;
        if let Some(why) = &state.broken {
            return Err(lost(why));
        }
        let slot = &mut state.slots[self.slot];
        slot.done = false;
        slot.frames.clear();
        write(state);
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
    pub async fn reply(&self) -> io::Result<()> {
        let mut wait = Wait {
            at: self,
            finished: false,
        };
        poll_fn(|cx| wait.poll(cx)).await
    }

    /// The frames of the last reply, back to back.
    pub fn frames(&self) -> io::Result<&[u8]> {
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
            let _ = Pipe::<F>::poll_flush(state, &mut cx);
        }
    }
}

impl<F: Framing> Drop for PipeRef<F> {
    fn drop(&mut self) {
        if let Ok(state) = self.pipe.state()
            && let Some(slot) = state.slots.get_mut(self.slot)
        {
            *slot = Slot::default();
        }
    }
}

/// The set-up of a new connection ([`PipeRef::setting_up`]): ends the connection when
/// dropped before it finished.
pub struct SetUp<'a, F: Framing>(Option<&'a Arc<Pipe<F>>>);

impl<F: Framing> SetUp<'_, F> {
    /// The set-up is done: the group's other sessions may send.
    pub fn finish(mut self) -> io::Result<()> {
        if let Some(pipe) = self.0.take() {
            let state = pipe.state()?;
            state.ready = true;
            for w in state.joining.drain(..) {
                w.wake();
            }
        }
        Ok(())
    }
}

impl<F: Framing> Drop for SetUp<'_, F> {
    fn drop(&mut self) {
        if let Some(pipe) = self.0
            && let Ok(state) = pipe.state()
        {
            Pipe::<F>::fail(state, "the connection's set-up did not finish".into());
        }
    }
}

/// One wait for a reply.
struct Wait<'a, F: Framing> {
    at: &'a PipeRef<F>,
    finished: bool,
}

impl<F: Framing> Wait<'_, F> {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
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
            let _ = Pipe::<F>::poll_flush(state, cx);
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
            match Pipe::<F>::poll_fill(state, cx) {
                Poll::Ready(true) => Pipe::<F>::dispatch(state, me),
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

impl<F: Framing> Drop for Wait<'_, F> {
    fn drop(&mut self) {
        if !self.finished
            && let Ok(state) = self.at.pipe.state()
        {
            Pipe::<F>::fail(state, "a request got no reply in time".into());
        }
    }
}
