//! Redis Cluster on kvmark's own pipes: a session keeps the cluster's slot map and a
//! pipe to each primary it has sent to, routes each request to the primary serving
//! its key's slot, and follows MOVED (the slot has a new owner: the map learns it)
//! and ASK (the slot is migrating: this one request goes to the importing node after
//! ASKING), counting both. With `layout=spread` a batch is split by slot: each key's
//! command goes to its primary, every primary's part in flight together.
//!
//! A broken pipe fails the operation as a broken connection: the session's link
//! reconnects, which reads the slot map again (a failover or a resharding shows there).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use redis::{Cmd, ConnectionAddr, ConnectionInfo, ErrorKind, RedisError, Value};

use super::pipe::{Group, PipeRef};
use super::resp;

/// How many hash slots a Redis Cluster has.
pub const SLOTS: usize = 16384;

/// Redirections one request follows before it fails: a slot moves once per
/// resharding step, so more than a few means the cluster disagrees with itself.
const MAX_REDIRECTS: usize = 5;

/// The slot of the key `prefix + key`, as Redis computes it: CRC16 (XMODEM) of the
/// key, or of its hash tag (the bytes between the first `{` and the next `}`, when
/// there are any).
pub fn key_slot(prefix: &[u8], key: &[u8]) -> u16 {
    let len = prefix.len() + key.len();
    let at = |i: usize| {
        if i < prefix.len() {
            prefix[i]
        } else {
            key[i - prefix.len()]
        }
    };
    let (mut lo, mut hi) = (0, len);
    if let Some(open) = (0..len).find(|&i| at(i) == b'{')
        && let Some(close) = (open + 1..len).find(|&i| at(i) == b'}')
        && close > open + 1
    {
        (lo, hi) = (open + 1, close);
    }
    let mut crc = crc16::State::<crc16::XMODEM>::new();
    let split = prefix.len();
    if lo < split {
        crc.update(&prefix[lo..hi.min(split)]);
    }
    if hi > split {
        crc.update(&key[lo.max(split) - split..hi - split]);
    }
    crc.get() % SLOTS as u16
}

/// Redirections followed, over every session of a store (timeline statistics).
#[derive(Default)]
pub struct Redirects {
    /// MOVED: a slot had a new owner.
    pub moved: AtomicU64,
    /// ASK: a slot was migrating and the key had left.
    pub ask: AtomicU64,
}

impl Redirects {
    /// The counters as timeline statistics.
    pub fn report(&self, out: &mut Vec<(String, f64)>) {
        for (name, n) in [("cluster_moved", &self.moved), ("cluster_ask", &self.ask)] {
            out.push((name.to_string(), n.load(Ordering::Relaxed) as f64));
        }
    }
}

/// What the sessions of one pipeline group share on a cluster: one pipe group per
/// primary, by address.
#[derive(Default)]
pub struct ClusterGroup {
    nodes: Mutex<Vec<(String, Arc<Group>)>>,
}

impl ClusterGroup {
    fn node(&self, addr: &str) -> Arc<Group> {
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, g)) = nodes.iter().find(|(a, _)| a == addr) {
            return g.clone();
        }
        let g = Arc::new(Group::default());
        nodes.push((addr.to_string(), g.clone()));
        g
    }
}

/// Where a reply sent a request instead of answering it.
enum Redirect {
    Moved(u16, String),
    Ask(String),
}

/// The redirection in a reply frame, if it is one: `-MOVED SLOT HOST:PORT` or
/// `-ASK SLOT HOST:PORT` (a node that does not know its own address leaves HOST out).
fn redirect_of(frame: &[u8]) -> Option<Redirect> {
    let (moved, rest) = if let Some(rest) = frame.strip_prefix(b"-MOVED ") {
        (true, rest)
    } else {
        (false, frame.strip_prefix(b"-ASK ")?)
    };
    let text = std::str::from_utf8(rest).ok()?.trim_end();
    let (slot, addr) = text.split_once(' ')?;
    let slot: u16 = slot.parse().ok()?;
    Some(match moved {
        true => Redirect::Moved(slot, addr.to_string()),
        false => Redirect::Ask(addr.to_string()),
    })
}

/// A session's view of the cluster: which primary serves each slot, and a pipe to
/// each primary it has used.
pub struct Nodes {
    /// Slot to index in `addrs`.
    owner: Box<[u16]>,
    /// The primaries' `HOST:PORT`.
    addrs: Vec<String>,
    pipes: Vec<Option<PipeRef>>,
    /// A seed's connection settings (credentials, timeouts); the address is each node's.
    info: ConnectionInfo,
    group: Option<Arc<ClusterGroup>>,
    redirects: Arc<Redirects>,
    /// The TLS handshakes' configuration (`rediss://` seeds).
    tls: Option<tokio_rustls::TlsConnector>,
    /// A batch's keys by primary, and its keys redirected (reused, so a batch
    /// allocates nothing once they have grown).
    parts: Vec<Vec<u32>>,
    stragglers: Vec<u32>,
}

/// An error of the client's own (not the server's).
fn client_error(what: &'static str, detail: String) -> RedisError {
    RedisError::from((ErrorKind::Client, what, detail))
}

impl Nodes {
    /// Reads the slot map from the first seed that gives it.
    pub async fn connect(
        seeds: &[ConnectionInfo],
        group: Option<Arc<ClusterGroup>>,
        redirects: Arc<Redirects>,
        tls: Option<tokio_rustls::TlsConnector>,
    ) -> Result<Nodes, RedisError> {
        let mut last = None;
        for seed in seeds {
            let attempt = async {
                let pipe = PipeRef::connect(None, seed, tls.as_ref()).await?;
                let mut slots = redis::cmd("CLUSTER");
                slots.arg("SLOTS");
                pipe.command(false, &slots).await
            };
            match attempt.await.and_then(|v| slot_map(&v, seed)) {
                Ok((owner, addrs)) => {
                    let n = addrs.len();
                    return Ok(Nodes {
                        owner,
                        addrs,
                        pipes: (0..n).map(|_| None).collect(),
                        info: seed.clone(),
                        group,
                        redirects,
                        tls,
                        parts: vec![Vec::new(); n],
                        stragglers: Vec::new(),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| client_error("no seed node", "the URL lists none".into())))
    }

    /// The index of the primary at `addr`, added when it is new.
    fn node_at(&mut self, addr: &str, from: usize) -> usize {
        // A node that does not know its address answers ":PORT": the host is the one
        // that answered.
        let addr = match addr.strip_prefix(':') {
            Some(port) => {
                let host = self.addrs[from].rsplit_once(':').map_or("", |(h, _)| h);
                format!("{host}:{port}")
            }
            None => addr.to_string(),
        };
        if let Some(i) = self.addrs.iter().position(|a| *a == addr) {
            return i;
        }
        self.addrs.push(addr);
        self.pipes.push(None);
        self.parts.push(Vec::new());
        self.addrs.len() - 1
    }

    /// The pipe to primary `node`, connected on first use.
    async fn pipe(&mut self, node: usize) -> Result<&PipeRef, RedisError> {
        if self.pipes[node].is_none() {
            let addr = &self.addrs[node];
            let info = self.info.clone().set_addr(parse_node_addr(self.info.addr(), addr)?);
            let group = self.group.as_ref().map(|g| g.node(addr));
            // Boxed: connecting is rare, and its state would otherwise grow every
            // request's future, which `block_on` moves whole on each operation.
            self.pipes[node] = Some(Box::pin(PipeRef::connect(group.as_deref(), &info, self.tls.as_ref())).await?);
        }
        Ok(self.pipes[node].as_ref().expect("connected above"))
    }

    /// Learns a redirection from `node`: MOVED updates the map (counted), ASK names
    /// the node to ask once (counted).
    fn follow(&mut self, to: Redirect, node: usize) -> Option<usize> {
        match to {
            Redirect::Moved(slot, addr) => {
                self.redirects.moved.fetch_add(1, Ordering::Relaxed);
                let owner = self.node_at(&addr, node);
                self.owner[usize::from(slot) % SLOTS] = owner as u16;
                None
            }
            Redirect::Ask(addr) => {
                self.redirects.ask.fetch_add(1, Ordering::Relaxed);
                Some(self.node_at(&addr, node))
            }
        }
    }

    /// Sends one request on `slot` (`frames` replies, written by `encode`) to the
    /// primary serving it, following redirections; returns its reply frames.
    pub async fn exchange(
        &mut self,
        slot: u16,
        frames: usize,
        encode: impl Fn(&mut Vec<u8>),
    ) -> Result<&[u8], RedisError> {
        let mut asking = None;
        for _ in 0..=MAX_REDIRECTS {
            let node = asking.unwrap_or(usize::from(self.owner[usize::from(slot)]));
            let asked = asking.is_some();
            let pipe = self.pipe(node).await?;
            pipe.send(frames + usize::from(asked), |w| {
                if asked {
                    w.extend_from_slice(super::pipe::ASKING);
                }
                encode(w)
            })?;
            pipe.reply().await?;
            let got = super::pipe::skip_asked(pipe.frames()?, asked)?;
            match redirect_of(got) {
                None => {
                    let skip = pipe.frames()?.len() - got.len();
                    return Ok(&self.pipes[node].as_ref().expect("sent on it").frames()?[skip..]);
                }
                Some(to) => asking = self.follow(to, node),
            }
        }
        Err(too_many(slot))
    }

    /// Sends the crate's command `cmd` on `slot`, following redirections.
    pub async fn command(&mut self, slot: u16, cmd: &Cmd) -> Result<Value, RedisError> {
        let mut asking = None;
        for _ in 0..=MAX_REDIRECTS {
            let node = asking.unwrap_or(usize::from(self.owner[usize::from(slot)]));
            match self.pipe(node).await?.command(asking.is_some(), cmd).await {
                Err(e) if let Some(to) = redirect_of_error(&e) => asking = self.follow(to, node),
                other => return other,
            }
        }
        Err(too_many(slot))
    }

    /// Sends the crate's pipeline (MULTI/EXEC when atomic) on `slot`, following
    /// redirections (see [`PipeRef::commands`]).
    pub async fn commands(
        &mut self,
        slot: u16,
        pipeline: &redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> Result<Vec<Value>, RedisError> {
        let mut asking = None;
        for _ in 0..=MAX_REDIRECTS {
            let node = asking.unwrap_or(usize::from(self.owner[usize::from(slot)]));
            let pipe = self.pipe(node).await?;
            match pipe.commands(asking.is_some(), pipeline, offset, count).await {
                Err(e) if let Some(to) = redirect_of_error(&e) => asking = self.follow(to, node),
                other => return other,
            }
        }
        Err(too_many(slot))
    }

    /// A batch of `n` single-key commands split by slot: key `i` is on `slot_of(i)`,
    /// `encode(w, i)` writes its command and `take(i, frame)` takes its reply. Each
    /// primary gets its keys' commands as one write, all primaries' in flight
    /// together; a key redirected is sent again on its own, after the others.
    pub async fn batch(
        &mut self,
        n: usize,
        slot_of: impl Fn(usize) -> u16,
        encode: impl Fn(&mut Vec<u8>, usize),
        mut take: impl FnMut(usize, &[u8]) -> Result<(), RedisError>,
    ) -> Result<(), RedisError> {
        for part in &mut self.parts {
            part.clear();
        }
        self.stragglers.clear();
        for i in 0..n {
            let node = usize::from(self.owner[usize::from(slot_of(i))]);
            self.parts[node].push(i as u32);
        }
        for node in 0..self.parts.len() {
            if self.parts[node].is_empty() {
                continue;
            }
            self.pipe(node).await?;
            let (part, pipe) = (&self.parts[node], self.pipes[node].as_ref().expect("connected above"));
            pipe.send(part.len(), |w| {
                for &i in part {
                    encode(w, i as usize);
                }
            })?;
            pipe.flush_now();
        }
        for node in 0..self.parts.len() {
            let Some(pipe) = self.pipes[node].as_ref().filter(|_| !self.parts[node].is_empty()) else {
                continue;
            };
            pipe.reply().await?;
            let mut frames = pipe.frames()?;
            for &i in &self.parts[node] {
                let len = match resp::frame_len(frames) {
                    Ok(Some(len)) => len,
                    _ => return Err(client_error("a reply cut short", format!("batch of {n}"))),
                };
                let (frame, rest) = frames.split_at(len);
                frames = rest;
                match redirect_of(frame) {
                    Some(_) => self.stragglers.push(i),
                    None => take(i as usize, frame)?,
                }
            }
        }
        let stragglers = std::mem::take(&mut self.stragglers);
        for &i in &stragglers {
            let frame = self.exchange(slot_of(i as usize), 1, |w| encode(w, i as usize)).await?;
            take(i as usize, frame)?;
        }
        self.stragglers = stragglers;
        Ok(())
    }
}

/// A node's `HOST:PORT` (as CLUSTER SLOTS and redirections give it) as an address,
/// reached as the seed `like` is (over TLS when it is).
pub fn parse_node_addr(like: &ConnectionAddr, addr: &str) -> Result<ConnectionAddr, RedisError> {
    addr.rsplit_once(':')
        .and_then(|(h, p)| Some(node_addr(like, h.to_string(), p.parse().ok()?)))
        .ok_or_else(|| client_error("a node address without a port", addr.to_string()))
}

/// The address of the node at `host`:`port`, reached as the seed `like` is.
pub fn node_addr(like: &ConnectionAddr, host: String, port: u16) -> ConnectionAddr {
    match like {
        // The crate's TLS parameters (the CA) are set again when its client is built.
        ConnectionAddr::TcpTls { insecure, .. } => ConnectionAddr::TcpTls {
            host,
            port,
            insecure: *insecure,
            tls_params: None,
        },
        _ => ConnectionAddr::Tcp(host, port),
    }
}

/// A server error that is a redirection.
fn redirect_of_error(e: &RedisError) -> Option<Redirect> {
    let (addr, slot) = e.redirect_node()?;
    Some(match e.kind() {
        ErrorKind::Server(redis::ServerErrorKind::Moved) => Redirect::Moved(slot, addr.to_string()),
        _ => Redirect::Ask(addr.to_string()),
    })
}

fn too_many(slot: u16) -> RedisError {
    client_error(
        "too many redirections",
        format!("slot {slot} was redirected more than {MAX_REDIRECTS} times"),
    )
}

/// The slot map in a CLUSTER SLOTS reply (`seed` answered it): which primary serves
/// each slot. Each entry is start, end, then the primary as [host, port, ...], then
/// replicas.
fn slot_map(v: &Value, seed: &ConnectionInfo) -> Result<(Box<[u16]>, Vec<String>), RedisError> {
    let seed_host = match seed.addr() {
        ConnectionAddr::Tcp(host, _) | ConnectionAddr::TcpTls { host, .. } => host.clone(),
        _ => String::new(),
    };
    let mut owner = vec![u16::MAX; SLOTS].into_boxed_slice();
    let mut addrs: Vec<String> = Vec::new();
    let bad = || client_error("CLUSTER SLOTS gave an unexpected reply", format!("{v:?}"));
    let Value::Array(entries) = v else { return Err(bad()) };
    for entry in entries {
        let Value::Array(parts) = entry else { return Err(bad()) };
        let [Value::Int(start), Value::Int(end), Value::Array(primary), ..] = parts.as_slice() else {
            return Err(bad());
        };
        let [host, Value::Int(port), ..] = primary.as_slice() else {
            return Err(bad());
        };
        // An empty or missing host means the node that answered.
        let host = match host {
            Value::BulkString(h) if !h.is_empty() && h != b"?" => String::from_utf8_lossy(h).into_owned(),
            _ => seed_host.clone(),
        };
        let addr = format!("{host}:{port}");
        let node = match addrs.iter().position(|a| *a == addr) {
            Some(i) => i,
            None => {
                addrs.push(addr);
                addrs.len() - 1
            }
        };
        for slot in *start..=*end {
            if let Some(o) = usize::try_from(slot).ok().and_then(|s| owner.get_mut(s)) {
                *o = node as u16;
            }
        }
    }
    if let Some(slot) = owner.iter().position(|&o| o == u16::MAX) {
        return Err(client_error(
            "the cluster does not serve every slot",
            format!("no primary serves slot {slot} (CLUSTER SLOTS); is the cluster's state ok?"),
        ));
    }
    Ok((owner, addrs))
}

/// The primaries of the cluster behind `conn` (a blocking connection to any node),
/// as `HOST:PORT`.
pub fn primaries(conn: &mut redis::Connection, seed: &ConnectionInfo) -> Result<Vec<String>, RedisError> {
    let v: Value = redis::cmd("CLUSTER").arg("SLOTS").query(conn)?;
    slot_map(&v, seed).map(|(_, addrs)| addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_redis_own() {
        // Values from the Redis Cluster specification and CLUSTER KEYSLOT.
        assert_eq!(key_slot(b"", b"123456789"), 0x31C3 % SLOTS as u16);
        assert_eq!(key_slot(b"", b"foo"), 12182);
        assert_eq!(key_slot(b"", b"{user1000}.following"), key_slot(b"", b"user1000"));
        // The tag found across the prefix and the key, and an empty tag hashes whole.
        assert_eq!(key_slot(b"ns{us", b"er1000}:x"), key_slot(b"", b"user1000"));
        assert_eq!(key_slot(b"{}", b"x"), key_slot(b"", b"{}x"));
        assert_eq!(key_slot(b"{ns}:", b"anything"), key_slot(b"", b"ns"));
    }

    #[test]
    fn redirections_are_read_from_their_frames() {
        assert!(matches!(
            redirect_of(b"-MOVED 3999 127.0.0.1:6381\r\n"),
            Some(Redirect::Moved(3999, a)) if a == "127.0.0.1:6381"
        ));
        assert!(matches!(redirect_of(b"-ASK 1 :7002\r\n"), Some(Redirect::Ask(a)) if a == ":7002"));
        assert!(redirect_of(b"-ERR MOVED\r\n").is_none());
        assert!(redirect_of(b"$5\r\nMOVED\r\n").is_none());
    }
}
