//! # deadletter-sqlite
//!
//! The SQLite [`deadletter::Store`]: the same queue, rules and conformance cases as the
//! PostgreSQL and IndexedDB stores, in one file that the threads and processes of one machine
//! share (or a private in-memory database). The Python package opens it by path; Rust programs
//! use it directly, without Python.
//!
//! It selects and persists; it decides nothing. Every write is a step function from
//! `deadletter::machine` that the engine hands in, run inside one `BEGIN IMMEDIATE` transaction,
//! so a failing step or a driver error leaves nothing written; what it shares with the other
//! stores (a message's claim lane, the checks on a row read back, the schema-version decision,
//! the upgrade of deadletter 0.1.0's rows) is the core's [`deadletter::storage`].
//!
//! - **Claim** reads short index ranges: the expired leases, the pending messages whose expiry
//!   came, the messages whose backoff just ended (they move to the ready lane: a storage-only
//!   `ready` column, the second key of the index of pending messages), then the head of the
//!   ready lane is taken (claim order: enqueue order, the id). It never walks the messages still
//!   in backoff nor the members of ordering groups waiting behind their heads (a storage-only
//!   `blocked` column keeps them out of every claim range), and every query finds its rows
//!   through an index (`tests/plans.rs` asserts the plans). An enqueue writes two B-trees: the
//!   table and the index of pending messages (schema version 8).
//! - **Decided under the lock**: every write reads the caller's clock once it holds the write
//!   lock (after `BEGIN IMMEDIATE`, which waits for other processes), then the queue's row
//!   (settings, pause, expiry counters: table `queues`), then the messages; a call that joins a
//!   group commit reads it when it gets the connection.
//! - **Files** use WAL; `durability` chooses whether every commit syncs it ([`Durability`]).
//!   Other processes on the file are waited for up to [`BUSY_TIMEOUT`]; reads go through a
//!   second connection, so they do not wait behind a write that waits for a lock.
//! - **Threads** of one process share a store's connection with group commit: the calls that
//!   arrive while another commits share the next commit, each in its own savepoint, each keeping
//!   its own outcome (`group_commit.rs`).
//! - **Forks**: a connection must not cross `fork()`; [`fork`] holds the hooks a host registers
//!   (the Python binding: `os.register_at_fork`), and a store opened before a fork fails every
//!   call in the child with a store error.
//! - **Schema**: created and versioned by the store (`PRAGMA user_version`, [`SCHEMA_VERSION`]);
//!   older files, back to deadletter 0.1.0's, are upgraded in place in one transaction; another
//!   application's file, or a newer deadletter's, is refused and left as it was. The DDL is in
//!   `schema.rs`, every statement in `sql.rs`, the row mapping in `row.rs`.
//!
//! SQLite is the system's `libsqlite3` by default; feature `bundled` compiles its own (rusqlite's
//! `bundled`). [`rusqlite`] is re-exported for [`SqliteStore::with_connection`].
//!
//! What it does not do: decide any state (the core does), keep a clock of its own, or draw
//! lease tokens (the caller passes its clock, which the store calls under the lock, and the
//! tokens).
//!
//! ## Example
//! ```
//! use deadletter::{Arg, Call, Engine, Item, Limits, Status};
//! use deadletter_sqlite::{Durability, SqliteStore};
//!
//! let path = std::env::temp_dir().join(format!("deadletter-doc-{}.db", std::process::id()));
//! let store = SqliteStore::open(&path, Durability::Full)?;
//! let db = Engine::new(store, Limits::default());
//! // The caller's clock (UTC ms), which the store reads once it holds its write lock.
//! let clock = || Ok(1_767_225_600_000);
//! let job = Item { payload: r#"{"to":"alice"}"#.into(), ..Item::default() };
//! let m = pollster::block_on(db.enqueue("emails".into(), &job, &clock))?;
//! let at = Call { clock: &clock, backoff: None, sample: 0.0 };
//! let claimed = pollster::block_on(db.claim("emails".into(), Arg::Null, || "token-1".into(), &at))?;
//! let c = claimed.value.expect("the message is due");
//! assert_eq!((c.id, c.status), (m.id, Status::Processing));
//! let done = pollster::block_on(db.succeed("emails".into(), c.id.into(), "token-1".into(), &clock))?;
//! assert_eq!(done.status, Status::Succeeded);
//! db.store().close()?;
//! # for suffix in ["", "-wal", "-shm"] {
//! #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
//! # }
//! # Ok::<_, deadletter::Error>(())
//! ```

mod checkpoint;
pub mod fork;
mod group_commit;
mod moves;
mod row;
mod schema;
mod sql;
mod store;

pub use rusqlite;
pub use schema::{
    SCHEMA_V1, SCHEMA_VERSION, UPGRADE_V2, UPGRADE_V3, UPGRADE_V4, UPGRADE_V5, UPGRADE_V6,
    UPGRADE_V7, UPGRADE_V8,
};
pub use sql::{
    BY_KEY_SQL, CLAIM_SQL, COUNT_BY_STATUS_SQL, COUNT_DELAYED_SQL, COUNT_EXPIRED_SQL,
    COUNT_EXPIRY_SQL, DELETE_SQL, EXPIRED_SQL, EXPIRING_SQL, GET_SQL, HEAD_SQL, INSERT_SQL,
    KEY_TAKEN_SQL, LIST_SQL, MOVE_SQL, NEXT_DUE_SQL, OLDEST_DEAD_SQL, OLDEST_DUE_SQL, PROMOTE_SQL,
    PUT_QUEUE_SQL, QUEUE_NAMES_SQL, QUEUE_SQL, QUEUES_SQL, RETIRE_SQL, TAIL_SQL, UNBLOCK_SQL,
    WRITE_SQL, list_status_sql,
};
pub use store::{BUSY_TIMEOUT, Durability, SqliteStore};
