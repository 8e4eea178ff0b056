//! What the server engines share: the connection of a session that reconnects after a
//! fault ([`Link`]), the per-operation timeout, the default server addresses from the
//! environment, and the masking of passwords in server addresses.
//!
//! Faults are counted, never fatal to kvmark (ARCHITECTURE.md, promise 3): an
//! operation that gets no reply within the timeout, or whose connection is refused or
//! dropped, fails with a message naming the engine, the operation and the cause; its
//! session drops the connection and opens a new one on a later operation. While the
//! server stays away, attempts are spaced by a backoff that doubles up to a second (or
//! the timeout, if shorter), and operations between two attempts fail at once, so no
//! operation waits longer than the timeout and a run ends on its budget.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::Fuse;
use tokio::time::{Instant, Sleep};

use super::inflight::{RuntimeId, block_on, runtime_id};
use crate::engine::{EngineError, EngineResult, KnobValue, OptionError};

/// The per-operation timeout when the `timeout` knob is not given.
pub const DEFAULT_TIMEOUT: &str = "5s";

/// The first wait before reconnecting; it doubles while connecting keeps failing.
const MIN_BACKOFF: Duration = Duration::from_millis(10);
/// The longest wait between two connection attempts (less when the timeout is shorter).
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The value of environment variable `var` when it is set and not empty, else `default`.
pub fn env_or(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// Parses a `timeout` knob: a positive duration with a unit ("5s", "250ms").
pub fn parse_timeout(v: &KnobValue<'_>) -> Result<Duration, OptionError> {
    match crate::clock::parse_duration_ns(v.text) {
        Ok(0) => Err(v.refuse("the timeout must be above zero")),
        Ok(ns) => Ok(Duration::from_nanos(ns)),
        Err(e) => Err(v.refuse(e)),
    }
}

/// `text` with every password replaced by `***`: the password of a URL's user
/// (`redis://user:secret@host`) and a `password=` parameter (in a URL's query or a
/// PostgreSQL `key=value` connection string). Server addresses are shown this way in
/// messages, `kvmark engines` and reports, so credentials given through the
/// environment or on the command line never reach a report.
pub fn mask_password(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if let Some(scheme_end) = text.find("://") {
        let rest = &text[scheme_end + 3..];
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        if let Some(at) = authority.rfind('@')
            && let Some(colon) = authority[..at].find(':')
        {
            let start = scheme_end + 3 + colon + 1;
            let end = scheme_end + 3 + at;
            if start < end {
                out = Cow::Owned(format!("{}***{}", &text[..start], &text[end..]));
            }
        }
    }
    if out.contains("password=") {
        let mut masked = String::with_capacity(out.len());
        let mut rest: &str = &out;
        while let Some(i) = rest.find("password=") {
            let value = i + "password=".len();
            masked.push_str(&rest[..value]);
            let end = rest[value..]
                .find(['&', ' ', '\t', '#'])
                .map_or(rest.len(), |e| value + e);
            if end > value {
                masked.push_str("***");
            }
            rest = &rest[end..];
        }
        masked.push_str(rest);
        out = Cow::Owned(masked);
    }
    out
}

/// How a server engine connects, and what its errors mean.
pub trait Connector {
    /// One open connection.
    type Conn;
    /// The client library's error.
    type Error: fmt::Display;
    /// The engine's name, for messages.
    const ENGINE: &'static str;
    /// The server's address with its password masked, for messages.
    fn address(&self) -> String;
    /// Opens a connection (the caller bounds it by the timeout).
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, Self::Error>>;
    /// What `e`, returned by an operation on `conn`, says about the connection.
    fn fault(&self, conn: &Self::Conn, e: &Self::Error) -> Fault;
    /// Why `conn` ended, where its client keeps that apart from the operations it
    /// fails (tokio-postgres fails them with "connection closed" and gives the cause
    /// to the connection's own future): added to a lost connection's message.
    fn ended(&self, _conn: &Self::Conn) -> Option<String> {
        None
    }
}

/// What an operation's error says about its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The server refused this operation; the connection is fine.
    Refused,
    /// A transient conflict (a deadlock, a busy server): the harness retries.
    Busy,
    /// The connection is gone or unusable: it is dropped and opened again later.
    Broken,
}

/// Counters shared by the sessions of one store, shown in `Store::stats()`.
#[derive(Debug, Default)]
pub struct LinkStats {
    /// Connections opened again after a fault.
    pub reconnects: AtomicU64,
    /// Connection attempts that failed.
    pub connect_failures: AtomicU64,
    /// Operations that got no reply within the timeout.
    pub timeouts: AtomicU64,
}

impl LinkStats {
    /// The counters as timeline statistics.
    pub fn report(&self, out: &mut Vec<(String, f64)>) {
        for (name, n) in [
            ("reconnects", &self.reconnects),
            ("connect_failures", &self.connect_failures),
            ("timeouts", &self.timeouts),
        ] {
            out.push((name.to_string(), n.load(Ordering::Relaxed) as f64));
        }
    }
}

/// One session's connection: opened on the runtime that runs the session's
/// operations, dropped after a fault and opened again, with backoff, by a later
/// operation.
pub struct Link<C: Connector> {
    connector: C,
    conn: Option<(C::Conn, RuntimeId)>,
    timeout: Duration,
    /// While the server stays away: when the next attempt may start, and why the last
    /// one failed.
    retry: Option<(Instant, String)>,
    backoff: Duration,
    /// True once a connection was lost, so the next one counts as a reconnection.
    lost: bool,
    stats: std::sync::Arc<LinkStats>,
    /// The operations' timer and the runtime it belongs to: armed at the deadline of
    /// an earlier operation, so never later than the running one's, and moved on only
    /// when it fires before the running operation's deadline (see [`within`]). One
    /// timer armed per timeout period instead of one per operation.
    timer: Option<(Pin<Box<Sleep>>, RuntimeId)>,
}

impl<C: Connector> Link<C> {
    /// A link that connects now (so a server that is away fails the session at once).
    pub fn open(connector: C, timeout: Duration, stats: std::sync::Arc<LinkStats>) -> EngineResult<Self> {
        let mut link = Link {
            connector,
            conn: None,
            timeout,
            retry: None,
            backoff: MIN_BACKOFF,
            lost: false,
            stats,
            timer: None,
        };
        block_on(async {
            let deadline = Instant::now() + link.timeout;
            link.connect(deadline).await.map(drop)
        })
        .map_err(|why| EngineError::other(format!("engine {}: {why}", C::ENGINE)))?;
        Ok(link)
    }

    /// The connector, for what it keeps besides the connection.
    pub fn connector(&self) -> &C {
        &self.connector
    }

    /// Runs operation `op` (named in errors) on the connection, connecting first when
    /// there is none, all within the timeout.
    pub fn run<T>(
        &mut self,
        op: &str,
        f: impl AsyncFnOnce(&C, &mut C::Conn) -> Result<T, C::Error>,
    ) -> EngineResult<T> {
        block_on(async {
            let deadline = Instant::now() + self.timeout;
            let fail = |why: fmt::Arguments<'_>| EngineError::other(format!("engine {}: {op}: {why}", C::ENGINE));
            // Connecting is boxed: its future is large, and this one is moved whole
            // into `block_on` on every operation.
            let here = runtime_id();
            if self.conn.as_ref().is_none_or(|(_, rt)| *rt != here)
                && let Err(why) = Box::pin(self.connect(deadline)).await
            {
                return Err(fail(format_args!("{why}")));
            }
            let Some((conn, rt)) = self.conn.as_mut() else {
                unreachable!("connect succeeded")
            };
            // A timer of the runtime running now (the one the connection was made on).
            let timer = match &mut self.timer {
                Some((timer, at)) if at == rt => timer,
                slot => &mut slot.insert((Box::pin(tokio::time::sleep_until(deadline)), *rt)).0,
            };
            match within(f(&self.connector, conn), timer, deadline).await {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => match self.connector.fault(conn, &e) {
                    Fault::Refused => Err(fail(format_args!("{e}"))),
                    Fault::Busy => Err(EngineError::busy(format!("engine {}: {op}: {e}", C::ENGINE))),
                    Fault::Broken => {
                        let cause = self.connector.ended(conn).map(|c| format!(": {c}")).unwrap_or_default();
                        let err = fail(format_args!(
                            "{e}{cause} (connection to {} lost; reconnecting)",
                            self.connector.address()
                        ));
                        self.drop_conn();
                        Err(err)
                    }
                },
                Err(_) => {
                    self.stats.timeouts.fetch_add(1, Ordering::Relaxed);
                    self.drop_conn();
                    Err(fail(format_args!(
                        "no reply from {} within the timeout of {:?}; the connection is dropped and opened again",
                        self.connector.address(),
                        self.timeout
                    )))
                }
            }
        })
    }

    /// Closes the connection and opens a new one now (`--reconnect-every`), within the
    /// timeout. A planned close, not a fault: it is not counted as a reconnection.
    /// While the backoff after a failed attempt runs it fails at once, like any call.
    pub fn reconnect(&mut self) -> EngineResult<()> {
        self.conn = None;
        block_on(async {
            let deadline = Instant::now() + self.timeout;
            Box::pin(self.connect(deadline)).await.map(drop)
        })
        .map_err(|why| EngineError::other(format!("engine {}: connect: {why}", C::ENGINE)))
    }

    fn drop_conn(&mut self) {
        self.conn = None;
        self.lost = true;
    }

    /// Makes sure there is a connection made on the runtime running now (a session
    /// handed to another thread connects again there: a connection's socket belongs
    /// to the runtime that opened it). Fails at once while the backoff runs.
    async fn connect(&mut self, deadline: Instant) -> Result<&mut C::Conn, String> {
        let here = runtime_id();
        if self.conn.as_ref().is_some_and(|(_, rt)| *rt != here) {
            self.conn = None;
        }
        if self.conn.is_none() {
            // While the server stays away, operations fail at once until the next
            // attempt is due: a run with an operation budget ends promptly, and one
            // with a time budget ends on time.
            if let Some((at, why)) = &self.retry
                && Instant::now() < *at
            {
                return Err(format!(
                    "cannot connect to {} ({why}); next attempt in {:?}",
                    self.connector.address(),
                    at.saturating_duration_since(Instant::now())
                ));
            }
            let attempt = tokio::time::timeout_at(deadline, self.connector.connect()).await;
            match attempt {
                Ok(Ok(conn)) => {
                    if std::mem::take(&mut self.lost) {
                        self.stats.reconnects.fetch_add(1, Ordering::Relaxed);
                    }
                    self.retry = None;
                    self.backoff = MIN_BACKOFF;
                    self.conn = Some((conn, here));
                }
                Ok(Err(e)) => return Err(self.failed(e.to_string())),
                Err(_) => return Err(self.failed(format!("no answer within {:?}", self.timeout))),
            }
        }
        Ok(&mut self.conn.as_mut().expect("connected").0)
    }

    /// Records a failed attempt and schedules the next one.
    fn failed(&mut self, why: String) -> String {
        self.stats.connect_failures.fetch_add(1, Ordering::Relaxed);
        self.lost = true;
        let message = format!("cannot connect to {}: {why}", self.connector.address());
        self.retry = Some((Instant::now() + self.backoff, why));
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF).min(self.timeout);
        message
    }
}

/// `op`'s output, or Err once `deadline` has passed without it. `timer` may be armed
/// earlier than `deadline` (at an earlier operation's): when it fires early it is
/// moved to `deadline` and the wait goes on (a later one is moved back at once).
async fn within<T>(op: impl Future<Output = T>, timer: &mut Pin<Box<Sleep>>, deadline: Instant) -> Result<T, ()> {
    if timer.deadline() > deadline {
        timer.as_mut().reset(deadline);
    }
    let mut op = std::pin::pin!(op);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = op.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        while timer.as_mut().poll(cx).is_ready() {
            if timer.deadline() >= deadline {
                return Poll::Ready(Err(()));
            }
            timer.as_mut().reset(deadline);
        }
        Poll::Pending
    })
    .await
}

/// The I/O half of a client connection: the future a client library hands back to be
/// spawned, which writes the queued requests, reads the replies and hands each to its
/// request. Spawned, it costs every request a hop through another task (queue the
/// request, wake the task to write it, wake it again for the reply, wake the request).
/// A session has one request outstanding at a time, so it polls the driver itself
/// while it waits ([`Driver::drive`]): the socket wakes the session's connection, and
/// the reply completes the request within the same poll.
///
/// A connection shared by a pipeline group has many requests outstanding, so its I/O
/// is spawned as a task of the thread's runtime instead ([`Driver::spawned`]), and
/// each request waits for it as for any task.
pub struct Driver {
    /// None when the I/O runs as a task of its own.
    io: Option<IoFuture>,
    /// The error the I/O future ended with, set once ([`Driver::keeping_error`]).
    ended: Arc<OnceLock<String>>,
}

impl Driver {
    /// Takes the connection's I/O future, whose end says nothing more than the
    /// requests it fails do.
    pub fn new(io: impl Future<Output = ()> + Send + 'static) -> Self {
        let io: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(io);
        Driver {
            io: Some(io.fuse()),
            ended: Arc::default(),
        }
    }

    /// For an I/O future that ends with the connection's error: spawns it on the
    /// running runtime (requests then wait with their own wakers) and keeps its error
    /// for [`Driver::ended`], as [`Driver::keeping_error`] does.
    pub fn spawned<E: fmt::Display>(io: impl Future<Output = Result<(), E>> + Send + 'static) -> Self {
        let ended = Arc::<OnceLock<String>>::default();
        let slot = Arc::clone(&ended);
        tokio::spawn(async move {
            if let Err(e) = io.await {
                let _ = slot.set(e.to_string());
            }
        });
        Driver { io: None, ended }
    }

    /// Another handle on a spawned connection's I/O (None for one driven in place,
    /// which only its owner can drive).
    pub fn share(&self) -> Option<Driver> {
        self.io.is_none().then(|| Driver {
            io: None,
            ended: Arc::clone(&self.ended),
        })
    }

    /// Takes an I/O future that ends with the connection's error, keeping the error's
    /// text for [`Driver::ended`]: the requests it fails may only say the connection
    /// closed.
    pub fn keeping_error<E: fmt::Display>(io: impl Future<Output = Result<(), E>> + Send + 'static) -> Self {
        let ended = Arc::<OnceLock<String>>::default();
        let slot = Arc::clone(&ended);
        let mut driver = Driver::new(async move {
            if let Err(e) = io.await {
                let _ = slot.set(e.to_string());
            }
        });
        driver.ended = ended;
        driver
    }

    /// Why the connection ended, if its I/O future ended with an error.
    pub fn ended(&self) -> Option<&str> {
        self.ended.get().map(String::as_str)
    }

    /// `request`, driving the connection's I/O while it waits. The request is boxed:
    /// a client's request future is large, and the operation's future that holds it
    /// is moved whole into `block_on` on every operation.
    pub fn drive<'a, R: Future + Send + 'a>(&'a mut self, request: R) -> Drive<'a, R::Output> {
        Drive {
            io: self.io.as_mut(),
            request: Box::pin(request),
        }
    }
}

/// A connection's I/O future, boxed.
type IoFuture = Fuse<Pin<Box<dyn Future<Output = ()> + Send>>>;

/// A request and the I/O of its connection ([`Driver::drive`]).
pub struct Drive<'a, T> {
    /// None when the I/O is a task of its own ([`Driver::spawned`]).
    io: Option<&'a mut IoFuture>,
    request: Pin<Box<dyn Future<Output = T> + Send + 'a>>,
}

impl<T> Future for Drive<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = &mut *self;
        let Some(io) = this.io.as_mut() else {
            return this.request.as_mut().poll(cx);
        };
        // The request waits only for what the driver does, and the driver runs only
        // here: so the request is polled with a waker that does nothing, and only the
        // driver's wake-ups (the socket's, its queue's) wake the session. A reply the
        // driver hands over is taken at once, in the same poll.
        let mut quiet = Context::from_waker(Waker::noop());
        if let Poll::Ready(out) = this.request.as_mut().poll(&mut quiet) {
            return Poll::Ready(out);
        }
        let _ = Pin::new(&mut **io).poll(cx);
        this.request.as_mut().poll(&mut quiet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::sync::Arc;

    /// A server that answers, or not, as the test says: connections are numbered.
    #[derive(Default)]
    struct Fake {
        connects: Cell<u32>,
        refuse: Cell<bool>,
        /// What the client says of a connection that ended ([`Connector::ended`]).
        cause: Cell<Option<&'static str>>,
    }

    impl Connector for &Fake {
        type Conn = u32;
        type Error = String;
        const ENGINE: &'static str = "fake";

        fn address(&self) -> String {
            "fake://127.0.0.1:1".to_string()
        }

        async fn connect(&self) -> Result<u32, String> {
            if self.refuse.get() {
                return Err("connection refused".to_string());
            }
            self.connects.set(self.connects.get() + 1);
            Ok(self.connects.get())
        }

        fn fault(&self, _: &u32, e: &String) -> Fault {
            if e == "broken" { Fault::Broken } else { Fault::Refused }
        }

        fn ended(&self, _: &u32) -> Option<String> {
            self.cause.get().map(str::to_string)
        }
    }

    #[test]
    fn faults_fail_the_operation_and_the_session_reconnects_with_backoff() {
        let fake = Fake::default();
        let stats = Arc::new(LinkStats::default());
        let timeout = Duration::from_millis(50);
        let mut link = Link::open(&fake, timeout, stats.clone()).unwrap();
        let which = async |_: &&Fake, c: &mut u32| Ok::<u32, String>(*c);
        assert_eq!(link.run("get", which).ok(), Some(1));

        // No reply: the operation ends at the timeout and the connection is dropped.
        let start = std::time::Instant::now();
        let e = link
            .run("get", async |_, _| {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok::<(), String>(())
            })
            .unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
        assert!(
            e.message
                .starts_with("engine fake: get: no reply from fake://127.0.0.1:1 within"),
            "{e}"
        );
        assert_eq!(stats.timeouts.load(Ordering::Relaxed), 1);
        assert_eq!(link.run("get", which).ok(), Some(2), "a new connection");
        assert_eq!(stats.reconnects.load(Ordering::Relaxed), 1);

        // A refusal keeps the connection; a broken connection is replaced.
        let e = link
            .run("put", async |_, _| Err::<(), _>("WRONGTYPE".to_string()))
            .unwrap_err();
        assert_eq!(e.message, "engine fake: put: WRONGTYPE");
        assert_eq!(link.run("get", which).ok(), Some(2));
        let e = link
            .run("put", async |_, _| Err::<(), _>("broken".to_string()))
            .unwrap_err();
        assert_eq!(
            e.message,
            "engine fake: put: broken (connection to fake://127.0.0.1:1 lost; reconnecting)"
        );
        // Where the client kept why the connection ended, the message says it.
        fake.cause.set(Some("FATAL: terminating connection"));
        let e = link
            .run("put", async |_, _| Err::<(), _>("broken".to_string()))
            .unwrap_err();
        assert!(
            e.message
                .starts_with("engine fake: put: broken: FATAL: terminating connection (connection to"),
            "{e}"
        );
        fake.cause.set(None);

        // While the server is away: a failed attempt, then failures at once until the
        // backoff has passed, then a new attempt.
        fake.refuse.set(true);
        let e = link.run("get", which).unwrap_err();
        assert!(
            e.message
                .contains("cannot connect to fake://127.0.0.1:1: connection refused"),
            "{e}"
        );
        // The next call must come within the backoff (10 ms at first); a loaded
        // machine may deschedule this thread past it, which makes that call another
        // attempt, so again until one lands inside (the backoff doubles each time).
        let mut attempts = 1;
        loop {
            let e = link.run("get", which).unwrap_err();
            if e.message.contains("next attempt in") {
                break;
            }
            assert!(e.message.contains("cannot connect to"), "{e}");
            attempts += 1;
            assert!(attempts < 20, "no call within the backoff: {e}");
        }
        assert_eq!(
            stats.connect_failures.load(Ordering::Relaxed),
            attempts,
            "no attempt during the backoff"
        );
        fake.refuse.set(false);
        // Past the longest backoff, which the timeout caps.
        std::thread::sleep(timeout * 2);
        // Connections 2 and 3 were lost to the two broken replies above.
        assert_eq!(link.run("get", which).ok(), Some(4));
        assert_eq!(stats.reconnects.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_driven_request_completes_in_the_poll_that_drives_its_reply() {
        // A stand-in for a client: the request waits on a channel that only the
        // driver's future fills, and the driver runs only when the request is polled.
        let (reply, answer) = tokio::sync::oneshot::channel::<u32>();
        let polled = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let count = polled.clone();
        let mut reply = Some(reply);
        let mut io = Driver::new(std::future::poll_fn(move |_| {
            count.fetch_add(1, Ordering::Relaxed);
            if let Some(r) = reply.take() {
                let _ = r.send(7);
            }
            Poll::Pending
        }));
        let got = block_on(io.drive(async { answer.await.unwrap() }));
        assert_eq!(got, 7);
        assert_eq!(polled.load(Ordering::Relaxed), 1, "one poll of the driver");
    }

    #[test]
    fn a_driver_keeps_the_error_its_connection_ended_with() {
        // As tokio-postgres does: the connection's future ends with the cause, and the
        // request it was serving sees only its reply channel closed.
        let (reply, answer) = tokio::sync::oneshot::channel::<u32>();
        let mut io = Driver::keeping_error(async move {
            drop(reply);
            Err::<(), _>("unexpected EOF")
        });
        assert_eq!(io.ended(), None);
        let got = block_on(io.drive(answer));
        assert!(got.is_err(), "the request fails");
        assert_eq!(io.ended(), Some("unexpected EOF"));
        let (reply, answer) = tokio::sync::oneshot::channel::<u32>();
        let mut fine = Driver::keeping_error(async move {
            let _ = reply.send(7);
            Ok::<(), &str>(())
        });
        assert_eq!(block_on(fine.drive(answer)), Ok(7));
        assert_eq!(fine.ended(), None, "a connection that ended cleanly has no cause");
    }

    #[test]
    fn an_early_timer_moves_to_the_deadline_instead_of_failing_the_operation() {
        block_on(async {
            let start = Instant::now();
            // Armed for an earlier operation, 10 ms from now.
            let mut timer = Box::pin(tokio::time::sleep_until(start + Duration::from_millis(10)));
            let deadline = start + Duration::from_millis(200);
            let op = tokio::time::sleep(Duration::from_millis(40));
            assert_eq!(within(op, &mut timer, deadline).await, Ok(()));
            assert_eq!(timer.deadline(), deadline, "moved on once");
            // An operation that never ends fails at its deadline, also one before the
            // timer's.
            let deadline = Instant::now() + Duration::from_millis(50);
            let r = within(std::future::pending::<()>(), &mut timer, deadline).await;
            assert_eq!(r, Err(()));
            assert!(Instant::now() >= deadline);
        });
    }

    #[test]
    fn timeouts_are_positive_durations() {
        let v = |text| KnobValue {
            engine: "fake",
            key: "timeout",
            text,
        };
        assert_eq!(parse_timeout(&v("250ms")), Ok(Duration::from_millis(250)));
        assert!(parse_timeout(&v("0s")).unwrap_err().message.contains("above zero"));
        assert!(parse_timeout(&v("5")).is_err());
    }

    #[test]
    fn passwords_are_masked_in_urls_and_connection_strings() {
        let cases = [
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
            ("redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
            ("redis://user:p@ss@host/1", "redis://user:***@host/1"),
            ("postgres://kvmark@127.0.0.1/db", "postgres://kvmark@127.0.0.1/db"),
            (
                "postgres://kv:pw@h:5/db?sslmode=off",
                "postgres://kv:***@h:5/db?sslmode=off",
            ),
            (
                "postgres://kv@h/db?password=pw&x=1",
                "postgres://kv@h/db?password=***&x=1",
            ),
            (
                "host=h user=u password=pw dbname=d",
                "host=h user=u password=*** dbname=d",
            ),
            (
                "--engine-opt=redis.url=redis://a:b@c",
                "--engine-opt=redis.url=redis://a:***@c",
            ),
            ("plain text", "plain text"),
        ];
        for (given, shown) in cases {
            assert_eq!(mask_password(given), shown, "{given}");
        }
    }
}
