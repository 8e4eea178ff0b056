//! The embedded engines: stores that run inside kvmark's process, in memory or in a
//! directory on a disk, each behind its feature (`skiplist` and `sim` always built).
//!
//! `skiplist` is the in-memory reference engine and `sim` the calibration engine on
//! top of it (service times, stalls, injected faults); `inplace` is what Kyoto Cabinet
//! and Tkrzw share: the walks and appends built on records their libraries hand to a
//! callback.

#[cfg(any(feature = "kyotocabinet", feature = "tkrzw"))]
mod inplace;
pub mod sim;
pub mod skiplist;

#[cfg(feature = "bdb")]
pub mod bdb;
#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "kyotocabinet")]
pub mod kyotocabinet;
#[cfg(feature = "leveldb")]
pub mod leveldb;
#[cfg(feature = "lmdb")]
pub mod lmdb;
#[cfg(feature = "mdbx")]
pub mod mdbx;
#[cfg(feature = "redb")]
pub mod redb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "tidesdb")]
pub mod tidesdb;
#[cfg(feature = "tkrzw")]
pub mod tkrzw;
#[cfg(feature = "tokyocabinet")]
pub mod tokyocabinet;
#[cfg(feature = "wiredtiger")]
pub mod wiredtiger;
