//! The work outside sessions, on the crate's blocking connections: probing the
//! server, removing a store, and the connections the sampler reads INFO on.

use std::time::Duration;

use redis::{Client, IntoConnectionInfo, RedisError, Value};

use super::{Settings, cluster, net, tls};
use crate::engine::{EngineError, EngineOptions, EngineResult, KnobTable};

/// The crate's client for `url` (or connection settings), trusting the CA and showing
/// the client certificate of the TLS knobs for a `rediss://` URL.
pub(super) fn client(s: &Settings, url: impl IntoConnectionInfo) -> redis::RedisResult<Client> {
    if !s.tls.any() {
        return Client::open(url);
    }
    let pem = s
        .tls
        .read_pem()
        .map_err(|why| RedisError::from((redis::ErrorKind::InvalidClientConfig, "cannot read the TLS files", why)))?;
    let client_tls = pem.identity.map(|(client_cert, client_key)| redis::ClientTlsConfig {
        client_cert,
        client_key,
    });
    let root_cert = pem.ca;
    tls::install_provider();
    Client::build_with_tls(url, redis::TlsCertificates { client_tls, root_cert })
}

/// A blocking connection to `url` (or connection settings), every exchange bounded by
/// the timeout.
pub(super) fn connect_blocking(s: &Settings, url: impl IntoConnectionInfo) -> redis::RedisResult<redis::Connection> {
    let conn = client(s, url)?.get_connection_with_timeout(s.timeout)?;
    conn.set_read_timeout(Some(s.timeout))?;
    conn.set_write_timeout(Some(s.timeout))?;
    Ok(conn)
}

/// A blocking connection for work outside sessions, every exchange bounded by the
/// timeout. In a cluster: to the primary that owns `key`'s slot (a store's hash tag),
/// or to the first seed node that answers when there is no key.
pub(super) fn admin_connection(s: &Settings, key: Option<&[u8]>) -> Result<redis::Connection, String> {
    let mut why = String::new();
    for url in s.urls() {
        let attempt = connect_blocking(s, url).and_then(|mut conn| match (s.cluster, key) {
            (true, Some(key)) => owner_of(s, url, &mut conn, key),
            _ => Ok(conn),
        });
        match attempt {
            Ok(conn) => return Ok(conn),
            Err(e) => why = format!("{}: {}", net::mask_password(url), said(e, s.timeout)),
        }
    }
    Err(why)
}

/// A connection to the primary that serves `key`'s slot, asked of the node behind
/// `conn` (reached at `url`, whose credentials the new connection reuses).
pub(super) fn owner_of(
    s: &Settings,
    url: &str,
    conn: &mut redis::Connection,
    key: &[u8],
) -> redis::RedisResult<redis::Connection> {
    let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(conn)?;
    let slots: Vec<Value> = redis::cmd("CLUSTER").arg("SLOTS").query(conn)?;
    // Each entry: start, end, then the primary as [host, port, id, ...], then replicas.
    for entry in &slots {
        if let Value::Array(parts) = entry
            && let [Value::Int(start), Value::Int(end), Value::Array(primary), ..] = parts.as_slice()
            && (*start..=*end).contains(&slot)
            && let [Value::BulkString(host), Value::Int(port), ..] = primary.as_slice()
        {
            let info = url.into_connection_info()?;
            let addr = cluster::node_addr(info.addr(), String::from_utf8_lossy(host).into_owned(), *port as u16);
            return connect_blocking(s, info.set_addr(addr));
        }
    }
    Err(RedisError::from((
        redis::ErrorKind::Client,
        "no primary serves the slot",
        format!("slot {slot} of {}", String::from_utf8_lossy(key)),
    )))
}

/// A blocking connection to every primary of the cluster, asked of the first seed
/// node that answers.
pub(super) fn primary_connections(s: &Settings) -> Result<Vec<redis::Connection>, String> {
    let mut why = String::new();
    for url in s.urls() {
        let attempt = (|| {
            let info = url.into_connection_info()?;
            let mut seed = connect_blocking(s, url)?;
            let mut conns = Vec::new();
            for addr in cluster::primaries(&mut seed, &info)? {
                let node = info.clone().set_addr(cluster::parse_node_addr(info.addr(), &addr)?);
                conns.push(connect_blocking(s, node)?);
            }
            Ok::<_, RedisError>(conns)
        })();
        match attempt {
            Ok(conns) => return Ok(conns),
            Err(e) => why = format!("{}: {}", net::mask_password(url), said(e, s.timeout)),
        }
    }
    Err(why)
}

/// A blocking call's error in words: a read that timed out says so.
pub(super) fn said(e: RedisError, timeout: Duration) -> String {
    match e.is_timeout() {
        true => format!("no reply within the timeout of {timeout:?}"),
        false => e.to_string(),
    }
}

/// "engine NAME: WHAT: ERROR".
pub(super) fn admin_err(s: &Settings, what: &str, e: impl std::fmt::Display) -> EngineError {
    EngineError::other(format!("engine {}: {what}: {e}", s.engine()))
}

/// A store's key prefix and index: `NS:` and `NS`; in a cluster's slot layout the
/// hash tag `{NS}:` and `{NS}`, so the keys and the index share one slot.
pub(super) fn names(s: &Settings, name: &str) -> (Vec<u8>, Vec<u8>) {
    let index = match s.cluster && !s.spread() {
        true => format!("{{{name}}}"),
        false => name.to_string(),
    };
    (format!("{index}:").into_bytes(), index.into_bytes())
}

/// Deletes every key of namespace `name` (on every primary of a cluster) and its index.
pub(super) fn remove(knobs: &KnobTable<Settings>, o: &EngineOptions, name: &str) -> EngineResult<()> {
    let s = knobs.parse(o)?;
    let (prefix, index) = names(&s, name);
    let what = format!("removing key prefix {name}: at {}", net::mask_password(&s.url));
    let mut conns = match s.cluster {
        true => primary_connections(&s),
        false => admin_connection(&s, None).map(|c| vec![c]),
    }
    .map_err(|e| admin_err(&s, &what, e))?;
    for conn in &mut conns {
        unlink_prefixed(conn, &prefix, s.cluster).map_err(|e| admin_err(&s, &what, said(e, s.timeout)))?;
    }
    if s.spread() {
        return Ok(());
    }
    let mut conn = admin_connection(&s, Some(&index)).map_err(|e| admin_err(&s, &what, e))?;
    redis::cmd("UNLINK")
        .arg(index)
        .exec(&mut conn)
        .map_err(|e| admin_err(&s, &what, said(e, s.timeout)))
}

/// Deletes the keys starting with `prefix` on the server behind `conn`; in a cluster
/// (`cluster`) one UNLINK per key, as the keys of one reply may lie in many slots.
pub(super) fn unlink_prefixed(conn: &mut redis::Connection, prefix: &[u8], cluster: bool) -> redis::RedisResult<()> {
    // SCAN's glob treats braces as plain characters.
    let mut pattern = prefix.to_vec();
    pattern.push(b'*');
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query(conn)?;
        if !keys.is_empty() {
            match cluster {
                true => {
                    let mut pipe = redis::pipe();
                    for key in &keys {
                        pipe.cmd("UNLINK").arg(key).ignore();
                    }
                    pipe.exec(conn)?;
                }
                false => redis::cmd("UNLINK").arg(&keys).exec(conn)?,
            }
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

pub(super) fn probe(knobs: &KnobTable<Settings>, o: &EngineOptions) -> Result<(), String> {
    let s = knobs.parse(o).map_err(|e| e.message)?;
    let mut conn = admin_connection(&s, None)?;
    redis::cmd("PING")
        .query::<String>(&mut conn)
        .map(drop)
        .map_err(|e| said(e, s.timeout))
}
