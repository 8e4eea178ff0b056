//! Redis on kvmark's own pipes (`server/pipe.rs`): RESP2 framing, opening a
//! connection as the URL asks (TLS, AUTH, SELECT), and the crate's commands and
//! pipelines sent over it (the rarer verbs; the hot ones are in `lean.rs`).

use std::io;

use redis::{Cmd, ConnectionAddr, ConnectionInfo, RedisError, Value};

use super::{resp, tls};
use crate::engine::server::pipe::{self, Framing, Stream};

/// RESP2's frames, for the shared pipe.
pub struct Resp;

impl Framing for Resp {
    const PROTOCOL: &'static str = "RESP2";

    #[inline]
    fn frame_len(buf: &[u8]) -> Result<Option<usize>, String> {
        resp::frame_len(buf).map_err(|resp::Malformed(why)| why)
    }
}

/// The pipe a group's sessions share.
pub type Group = pipe::Group<Resp>;

/// A session's hold on a connection to a Redis server (see `server/pipe.rs`).
pub struct PipeRef(pipe::PipeRef<Resp>);

impl PipeRef {
    /// Joins the group's connection, or opens one (for `group` None, one of its own)
    /// to the server of `info`.
    /// `tls` is the handshake's configuration, for a `rediss://` address.
    pub async fn connect(
        group: Option<&Group>,
        info: &ConnectionInfo,
        tls: Option<&tokio_rustls::TlsConnector>,
    ) -> Result<PipeRef, RedisError> {
        let (me, make) = pipe::PipeRef::claim(group)?;
        let me = PipeRef(me);
        if make {
            let setup = me.0.setting_up();
            me.open(info, tls).await?;
            setup.finish()?;
        } else {
            me.0.joined().await?;
        }
        Ok(me)
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
        let nodelay = info.tcp_settings().nodelay();
        let stream = match info.addr() {
            ConnectionAddr::Tcp(host, port) => Stream::tcp(host, *port, nodelay).await?,
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
                Stream::tls(tls, name, host, *port, nodelay).await?
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
        self.0.attach(stream)?;
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
        Ok(())
    }

    /// Appends one request, written with `encode`, that `frames` replies answer.
    #[inline]
    pub fn send(&self, frames: usize, encode: impl FnOnce(&mut Vec<u8>)) -> Result<(), RedisError> {
        Ok(self.0.send(frames, encode)?)
    }

    /// Waits for the reply to this session's request; then its frames are in
    /// [`PipeRef::frames`]. The pipe's own future, not an async wrapper converting its
    /// error (one more state machine polled on every request: 60 instructions a SET
    /// under callgrind); `?` makes the I/O error a `RedisError` where it is awaited.
    #[inline]
    pub fn reply(&self) -> impl Future<Output = io::Result<()>> + '_ {
        self.0.reply()
    }

    /// The frames of the last reply, back to back.
    #[inline]
    pub fn frames(&self) -> Result<&[u8], RedisError> {
        Ok(self.0.frames()?)
    }

    /// Starts writing what is buffered without waiting for it (see
    /// [`pipe::PipeRef::flush_now`]).
    pub fn flush_now(&self) {
        self.0.flush_now()
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
                _ => return Err(pipe::lost("a reply cut short").into()),
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
