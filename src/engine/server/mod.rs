//! The server engines and the client layer they share.
//!
//! - [`inflight`]: many requests in flight from one worker thread (`--connections`):
//!   the coroutine executor a server engine's verbs wait through, which the crew runs
//!   its connections on.
//! - [`net`]: the connection layer every server engine's sessions use ([`net::Link`]
//!   with its [`net::Connector`]: timeouts, reconnecting, faults counted).
//! - [`pipeline`]: pipeline groups (`--pipeline`), sessions sharing one connection.
//! - [`pipe`]: one connection carrying a pipeline group's requests, for the engines
//!   whose protocol kvmark speaks itself (Redis's RESP, memcached's meta commands).
//! - [`tls`]: the TLS knobs every server engine shares and the rustls configuration
//!   they make.
//! - The engines, each behind its feature: `redis` (and `redis-cluster`, with the RESP
//!   codec in `redis/resp.rs`), `postgres`, `mariadb` (and `myrocks`), `mongodb`,
//!   `etcd`, `memcached` (its meta protocol in `memcached/meta.rs`).

pub mod inflight;
pub mod net;
#[cfg(any(feature = "redis", feature = "memcached"))]
pub mod pipe;
pub mod pipeline;
#[cfg(feature = "tls")]
pub mod tls;

#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(feature = "mariadb")]
pub mod mariadb;
#[cfg(feature = "memcached")]
pub mod memcached;
#[cfg(feature = "mongodb")]
pub mod mongodb;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
