//! What tells the two engines apart: each one's [`Flavor`] (storage engine, key limit,
//! knobs, the status variables its timeline reports) and the type that names it.

use super::admin::{address, probe, remove};
use super::knobs::{INNODB_KNOBS, MYROCKS_KNOBS, Settings};
use crate::engine::{KnobTable, ServerKind};

/// What tells the two engines apart.
pub(super) struct Flavor {
    pub(super) engine: &'static str,
    /// One line for `kvmark engines`.
    pub(super) description: &'static str,
    pub(super) server: &'static ServerKind,
    /// The storage engine in CREATE TABLE.
    pub(super) storage_engine: &'static str,
    /// The longest key the storage engine indexes (and the VARBINARY's length).
    pub(super) max_key_bytes: usize,
    pub(super) knobs: &'static KnobTable<Settings>,
    /// SHOW GLOBAL STATUS variables reported in the timeline, lower-cased there.
    pub(super) status: &'static [&'static str],
}

const INNODB: Flavor = Flavor {
    engine: "mariadb",
    description: "a MariaDB server (mysql_async), tables in InnoDB: a VARBINARY-keyed table, prepared statements per session",
    server: &INNODB_SERVER,
    storage_engine: "InnoDB",
    max_key_bytes: 3072,
    knobs: &INNODB_KNOBS,
    status: &[
        "Innodb_buffer_pool_read_requests",
        "Innodb_buffer_pool_reads",
        "Innodb_buffer_pool_pages_data",
        "Innodb_buffer_pool_pages_dirty",
        "Innodb_buffer_pool_pages_flushed",
        "Innodb_buffer_pool_wait_free",
        "Innodb_log_write_requests",
        "Innodb_log_writes",
        "Innodb_log_waits",
        "Innodb_os_log_written",
        "Innodb_checkpoint_age",
        "Innodb_data_fsyncs",
        "Innodb_data_reads",
        "Innodb_row_lock_waits",
        "Innodb_deadlocks",
        "Innodb_history_list_length",
        // Rows, as the server's handler interface counts them (MariaDB has no
        // Innodb_rows_* counters).
        "Handler_read_key",
        "Handler_read_next",
        "Handler_write",
        "Handler_update",
        "Handler_delete",
        "Handler_commit",
        "Handler_rollback",
        "Threads_connected",
        "Threads_running",
        "Questions",
    ],
};

const MYROCKS: Flavor = Flavor {
    engine: "myrocks",
    description: "a MariaDB server (mysql_async), tables in MyRocks (RocksDB inside MariaDB): a VARBINARY-keyed table, prepared statements per session",
    server: &MYROCKS_SERVER,
    storage_engine: "ROCKSDB",
    max_key_bytes: 767,
    knobs: &MYROCKS_KNOBS,
    status: &[
        "Rocksdb_rows_read",
        "Rocksdb_rows_inserted",
        "Rocksdb_rows_updated",
        "Rocksdb_rows_deleted",
        "Rocksdb_block_cache_hit",
        "Rocksdb_block_cache_miss",
        "Rocksdb_bytes_read",
        "Rocksdb_bytes_written",
        "Rocksdb_wal_bytes",
        "Rocksdb_wal_synced",
        "Rocksdb_flush_write_bytes",
        "Rocksdb_compact_read_bytes",
        "Rocksdb_compact_write_bytes",
        "Rocksdb_memtable_total",
        "Rocksdb_memtable_unflushed",
        "Rocksdb_stall_micros",
        "Rocksdb_stall_total_slowdowns",
        "Rocksdb_stall_total_stops",
        "Rocksdb_row_lock_deadlocks",
        "Rocksdb_row_lock_wait_timeouts",
        "Rocksdb_snapshot_conflict_errors",
        "Handler_commit",
        "Handler_rollback",
        "Threads_connected",
        "Threads_running",
        "Questions",
    ],
};

/// One of the two engines, as a type: a session's connector names its engine in
/// messages through an associated constant.
pub(super) trait Kind: Send + Sync + 'static {
    const FLAVOR: &'static Flavor;
}

/// MariaDB with InnoDB.
pub(super) struct InnoDb;
impl Kind for InnoDb {
    const FLAVOR: &'static Flavor = &INNODB;
}

/// MariaDB with MyRocks.
pub(super) struct MyRocks;
impl Kind for MyRocks {
    const FLAVOR: &'static Flavor = &MYROCKS;
}

static INNODB_SERVER: ServerKind = ServerKind {
    namespace: "table",
    address: |o| address(&INNODB, o),
    probe: |o| probe(&INNODB, o),
    remove: |o, name| remove(&INNODB, o, name),
    pipeline: false,
    ordered: true,
};

static MYROCKS_SERVER: ServerKind = ServerKind {
    namespace: "table",
    address: |o| address(&MYROCKS, o),
    probe: |o| probe(&MYROCKS, o),
    remove: |o, name| remove(&MYROCKS, o, name),
    pipeline: false,
    ordered: true,
};
